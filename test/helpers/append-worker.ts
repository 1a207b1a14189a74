// Test helper: append `add` events to a workspace's grex.jsonl in a loop, so a
// test can SIGKILL it at any moment. Usage:
//   bun test/helpers/append-worker.ts <workspace> <tag> <count> [--split random|newline] [--pause-ms N] [--seed N] [--split-from N]
// Event ids are `<tag>-<i>`; count 0 means forever; with --split-from N, events
// before the N-th are appended normally. Protocol on stdout (written
// synchronously, so nothing is lost to buffering when killed):
//   ready         modules loaded, about to append
//   half <id>     (split mode) the first part of the line is on disk
//   ok <id>       the whole line is written and fsynced (acknowledged)
// Split mode simulates a crash inside an append: the line goes out in two
// write() calls with a pause between (under the real manifest lock). `random`
// splits at a random byte, `newline` writes everything but the final "\n".
import { closeSync, fsyncSync, openSync, writeSync } from "node:fs";
import { withManifestLock } from "../../src/core/locks/locks.ts";
import { appendEvents, eventLine, makeEvent, prepareJsonlAppend } from "../../src/core/workspace/manifest.ts";
import { workspaceAt } from "../../src/core/base/workspace.ts";

const args = process.argv.slice(2);
const [root, tag, countArg] = args;
const opt = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
if (!root || !tag || countArg === undefined) {
  process.stderr.write("usage: append-worker.ts <workspace> <tag> <count> [--split random|newline] [--pause-ms N] [--seed N] [--split-from N]\n");
  process.exit(2);
}
const count = Number(countArg);
const split = opt("--split");
const pauseMs = Number(opt("--pause-ms") ?? "20");
const splitFrom = Number(opt("--split-from") ?? "0");
let seed = Number(opt("--seed") ?? "1") >>> 0;
const rand = () => {
  seed = (seed * 1664525 + 1013904223) >>> 0;
  return seed / 4294967296;
};
const say = (line: string) => writeSync(1, `${line}\n`);
const ws = workspaceAt(root);

function writeAll(fd: number, bytes: Uint8Array): void {
  let off = 0;
  while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
  fsyncSync(fd);
}

async function appendSplit(id: string, line: string): Promise<void> {
  await withManifestLock(ws, undefined, async () => {
    // Like the real appender: never glue onto a previous line missing its "\n".
    const bytes = Buffer.from((prepareJsonlAppend(ws.manifestPath) ?? "") + line, "utf8");
    const cut = split === "newline" ? bytes.length - 1 : 1 + Math.floor(rand() * (bytes.length - 1));
    const fd = openSync(ws.manifestPath, "a");
    try {
      writeAll(fd, bytes.subarray(0, cut));
      say(`half ${id}`);
      await Bun.sleep(pauseMs);
      writeAll(fd, bytes.subarray(cut));
    } finally {
      closeSync(fd);
    }
  });
}

say("ready");
for (let i = 0; count === 0 || i < count; i++) {
  const id = `${tag}-${i}`;
  const ev = makeEvent("add", id, { url: `https://example.invalid/${tag}/${i}.git`, path: id, type: "meta", ref: null });
  if (split && i >= splitFrom) await appendSplit(id, eventLine(ev));
  else await appendEvents(ws, [ev]);
  say(`ok ${id}`);
}
