// `rm` on a full disk says truthfully where things are: the pack's directory
// is moved back into the workspace when the records cannot be written, and
// the same `rm` finishes once space is freed. The workspace lives on a small
// tmpfs of its own (mounting needs root; elsewhere the test is skipped).
import { afterAll, expect, test } from "bun:test";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { TestWorkspace } from "../helpers/workspace.ts";

const t = new TestWorkspace("grex-hostile-disk-rm-");
const mount = (args: string[]) => Bun.spawnSync(args, { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
const mounted = process.getuid?.() === 0 && mount(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", t.ws]);

afterAll(() => {
  if (mounted) mount(["umount", t.ws]);
  t.cleanup();
});

/** Fill the file system holding `dir` to its last byte. */
function fill(dir: string): string {
  const file = join(dir, "filler");
  const fd = openSync(file, "w");
  for (const size of [1 << 20, 1 << 12, 1]) {
    const buf = Buffer.alloc(size, 1);
    try {
      for (;;) writeSync(fd, buf);
    } catch {
      // ENOSPC at this size: go on with a smaller one
    }
  }
  closeSync(fd);
  return file;
}

test.skipIf(!mounted)("rm with 0 bytes free leaves the pack registered and its directory in place, says so, and finishes once space is freed", async () => {
  const up = t.repo("full", { "README.md": "full\n" });
  expect((await t.grex("init")).code).toBe(0);
  expect((await t.grex("add", up, "full")).code).toBe(0);
  // A second pack keeps the lockfile and .gitignore non-empty: rewriting them then needs a new page.
  expect((await t.grex("add", t.repo("other", { "README.md": "other\n" }), "other")).code).toBe(0);
  const manifest = readFileSync(join(t.ws, "grex.jsonl"), "utf8");
  const filler = fill(t.ws);
  const r = await t.grex("rm", "full");
  expect(r.code).not.toBe(0);
  expect(r.stderr.trim().split("\n")).toHaveLength(1);
  expect(r.stderr).not.toContain("nothing was half-written");
  // What the sentence says is where things are.
  // The first file rm writes names the disk: this machine's install records, or the lockfile.
  expect(r.stderr).toMatch(new RegExp(`No space left on the disk holding ${t.ws.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/(grex\\.lock\\.jsonl \\(the lockfile\\)|\\.grex/\\.state/installs\\.json \\(grex's runtime state in \\.grex/\\.state\\))`));
  expect(r.stderr).toContain(`'full' is still registered and its directory is back at ${join(t.ws, "full")}`);
  expect(existsSync(join(t.ws, "full", "README.md"))).toBe(true);
  expect(readdirSync(join(t.ws, ".grex", ".state", "trash"))).toEqual([]);
  expect(readFileSync(join(t.ws, "grex.jsonl"), "utf8")).toBe(manifest);
  rmSync(filler);
  const again = await t.grex("rm", "full");
  expect(again.stderr).toBe("");
  expect(again.code).toBe(0);
  expect(existsSync(join(t.ws, "full"))).toBe(false);
});
