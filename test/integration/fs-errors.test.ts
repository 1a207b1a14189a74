// Filesystem trouble with grex's own files is one sentence naming the file and
// the way out, with exit 3 (integrity) — never a raw EISDIR/EACCES text with
// exit 1, never "lock contention" (5), never a hang on a FIFO. Permission cases
// run grex as an unprivileged user (setpriv), since root ignores file modes.
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

// Real processes on a shared machine: give them room.
setDefaultTimeout(60_000);

let t: TestWorkspace;
beforeEach(async () => {
  t = new TestWorkspace("grex-fserr-");
  await t.grex("init");
});
afterEach(() => {
  Bun.spawnSync(["chmod", "-R", "u+rwX", t.root]);
  t.cleanup();
});

/** Exactly one `grex: …` line on stderr, no stack, no raw errno text. */
function sentence(stderr: string): string {
  expect(stderr).toMatch(/^grex: [^\n]+\n$/);
  expect(stderr).not.toMatch(/^\s+at |EACCES:|EISDIR:|ESPIPE:|errno/m);
  return stderr.slice(6, -1);
}

describe("grex's files that are not usable files", () => {
  test("a manifest that is a directory: exit 3, says so", async () => {
    rmSync(join(t.ws, "grex.jsonl"));
    mkdirSync(join(t.ws, "grex.jsonl"));
    for (const verb of ["ls", "sync", "status"]) {
      const r = await t.grex(verb);
      expect(r.code).toBe(3);
      expect(sentence(r.stderr)).toBe(`${join(t.ws, "grex.jsonl")} (the manifest) is a directory, not a file; move it aside (then \`grex init\` makes a new one) or point --manifest at the file.`);
    }
  });

  test("a manifest that is a FIFO: exit 3 at once, no hang", async () => {
    rmSync(join(t.ws, "grex.jsonl"));
    expect(Bun.spawnSync(["mkfifo", join(t.ws, "grex.jsonl")]).exitCode).toBe(0);
    const r = await t.grex("ls");
    expect(r.code).toBe(3);
    expect(sentence(r.stderr)).toContain("is not a regular file (a pipe, socket or device)");
  });

  test("a lockfile that is a directory: exit 3", async () => {
    rmSync(join(t.ws, "grex.lock.jsonl"));
    mkdirSync(join(t.ws, "grex.lock.jsonl"));
    const r = await t.grex("ls");
    expect(r.code).toBe(3);
    expect(sentence(r.stderr)).toContain("(the lockfile) is a directory, not a file");
  });

  test(".grex/.state that is a file: exit 3 (not 5: nobody holds a lock)", async () => {
    rmSync(join(t.ws, ".grex", ".state"), { recursive: true, force: true });
    mkdirSync(join(t.ws, ".grex"), { recursive: true });
    writeFileSync(join(t.ws, ".grex", ".state"), "x");
    const r = await t.grex("sync");
    expect(r.code).toBe(3);
    expect(sentence(r.stderr)).toMatch(/is a file where a directory should be; move that file aside \(grex recreates it\)\.$/);
  });
});

const canDropPrivileges = process.getuid?.() === 0 && Bun.which("setpriv") !== null;

describe.skipIf(!canDropPrivileges)("permissions (grex run as an unprivileged user)", () => {
  function asNobody(...argv: string[]) {
    const r = Bun.spawnSync(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, GREX_MAIN, ...argv], {
      cwd: t.ws,
      env: { ...t.env, HOME: t.home },
      stdout: "pipe",
      stderr: "pipe",
    });
    return { code: r.exitCode, stderr: r.stderr.toString() };
  }

  test("an unreadable manifest: exit 3, names the file and the fix", () => {
    Bun.spawnSync(["chmod", "-R", "a+rX", t.root]);
    const r0 = asNobody("ls");
    expect(r0.code).toBe(0); // control: readable, it works
    chmodSync(join(t.ws, "grex.jsonl"), 0o000);
    const r = asNobody("ls");
    expect(r.code).toBe(3);
    expect(sentence(r.stderr)).toBe(
      `Permission denied on ${join(t.ws, "grex.jsonl")} (the manifest); give your user read and write access to it (chmod u+rw, or chown) or run grex as its owner.`,
    );
  });

  test("an unwritable manifest when registering: exit 3", async () => {
    mkdirSync(join(t.ws, "r1"));
    Bun.spawnSync(["git", "init", "-q"], { cwd: join(t.ws, "r1") });
    Bun.spawnSync(["git", "remote", "add", "origin", "https://example.invalid/r1.git"], { cwd: join(t.ws, "r1") });
    Bun.spawnSync(["chmod", "-R", "a+rwX", t.root]);
    chmodSync(join(t.ws, "grex.jsonl"), 0o444);
    const r = asNobody("import", "--scan");
    expect(r.code).toBe(3);
    expect(sentence(r.stderr)).toStartWith(`Permission denied on ${join(t.ws, "grex.jsonl")} (the manifest)`);
  });

  test("an unreadable .grex/.state: exit 3, not lock contention (5)", () => {
    Bun.spawnSync(["chmod", "-R", "a+rwX", t.root]);
    mkdirSync(join(t.ws, ".grex", ".state"), { recursive: true });
    chmodSync(join(t.ws, ".grex", ".state"), 0o000);
    const r = asNobody("sync");
    expect(r.code).toBe(3);
    expect(sentence(r.stderr)).toContain("(grex's runtime state in .grex/.state); give your user read and write access");
  });
});
