// Whose commands run (issue 34): a dry run runs no filter driver, whatever any
// config says; a driver defined only in a pack's own .git/config (which grex
// writes from what an upstream said) never runs, on status, sync or add.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { appendFileSync, existsSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestWorkspace } from "../helpers/workspace.ts";

const t = new TestWorkspace("grex-hostile-filters-");
afterAll(() => t.cleanup());
beforeAll(async () => {
  expect((await run("init")).code).toBe(0);
});

async function run(...argv: string[]) {
  const p = t.spawnGrex(argv);
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

/** A filter command that leaves a marker file and passes content through. */
const marking = (marker: string) => `touch ${marker}; cat`;

test("add --dry-run runs no filter driver, not even one the user's own config defines", async () => {
  const up = t.repo("filtered", { ".gitattributes": "* filter=x\n", "a.txt": "a\n" });
  const marker = join(t.root, "smudged-by-dry-run");
  writeFileSync(join(t.home, ".gitconfig"), `[filter "x"]\n\tsmudge = ${marking(marker)}\n\tclean = ${marking(marker)}\n`);
  try {
    const r = await run("add", "--dry-run", up, "filtered");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(existsSync(marker)).toBe(false);
  } finally {
    rmSync(join(t.home, ".gitconfig"), { force: true });
  }
});

test("a filter driver only the pack's .git/config defines never runs: not on status, sync, or add --dry-run", async () => {
  const up = t.repo("victim", { ".gitattributes": "*.txt filter=evil\n", "a.txt": "a\n" });
  expect((await run("add", up, "victim")).code).toBe(0);
  const pack = join(t.ws, "victim");
  const marker = join(t.root, "ran-evil-driver");
  // What an unescaped URL could have injected: a driver in the pack's own config.
  appendFileSync(join(pack, ".git", "config"), `[filter "evil"]\n\tclean = ${marking(marker)}\n\tsmudge = ${marking(marker)}\n\trequired = true\n`);
  const old = new Date(Date.now() - 60_000);
  utimesSync(join(pack, "a.txt"), old, old); // stat changed: the file is hashed again
  const st = await run("status", "--json");
  expect(st.code).toBe(0);
  expect(existsSync(marker)).toBe(false);
  const row = (JSON.parse(st.stdout).packs as Array<{ id: string; drift: string; missing_filters: string[] }>).find((p) => p.id === "victim");
  expect(row?.drift).not.toBe("dirty");
  expect(row?.missing_filters).toEqual(["evil"]); // not the user's driver: named as missing
  t.commit(up, { "b.txt": "b\n" });
  const s = await run("sync");
  expect(s.code).toBe(0);
  expect(existsSync(join(pack, "b.txt"))).toBe(true);
  expect(existsSync(marker)).toBe(false);
  expect((await run("sync", "--dry-run")).code).toBe(0);
  expect(existsSync(marker)).toBe(false);
});

test("a child URL carrying a filter driver into the child's .git/config (newlines) never gets it run: add --dry-run, add, status", async () => {
  const { startGitHttpServer } = await import("../helpers/git-http-server.ts");
  const server = await startGitHttpServer(t.upstream);
  try {
    t.repo("inj-child", { ".gitattributes": "* filter=x\n", "c.txt": "c\n" });
    // The lines land in the child's .git/config; the URL parser drops the newlines and sends the rest as a user name.
    // (No '/', '"' or ';' in the lines: a '/' would end the URL's authority, and grex quotes the value. `cd` goes to HOME.)
    const marker = join(t.home, "ran-injected");
    const cmd = "cd && touch ran-injected && cat";
    const url = server.url.replace("http://", `http://u\n[filter.x]\n\tsmudge = ${cmd}\n\tclean = ${cmd}\n;:p@`) + "/inj-child";
    const meta = t.repo("inj-meta", { ".grex/pack.yaml": `schema_version: "1"\nname: injmeta\ntype: meta\nchildren:\n  - url: ${JSON.stringify(url)}\n    path: kid\n` });
    await run("add", "--dry-run", meta, "injmeta");
    expect(existsSync(marker)).toBe(false);
    const added = await run("add", meta, "injmeta");
    expect(existsSync(marker)).toBe(false);
    if (added.code === 0) {
      // Accepted (the URL is cleaned on the way): the file's bytes are as stored, and status runs no driver either.
      const kid = join(t.ws, "injmeta", "kid");
      const old = new Date(Date.now() - 60_000);
      utimesSync(join(kid, "c.txt"), old, old);
      expect((await run("status")).code).toBe(0);
      expect(existsSync(marker)).toBe(false);
    }
  } finally {
    await server.stop();
  }
});
