// Control characters in URLs, refs and paths are refused at every entry point
// (CLI, MCP, grex.jsonl, grex.lock.jsonl, pack.yaml children, .gitmodules,
// REPOS.json, import --scan): a newline in a URL would otherwise reach a
// `.git/config` as a line of its own (`[filter.x] smudge = <cmd>`), and the
// command would run on the next checkout or status. Each test plants such a
// value, runs the verb (dry run and status included), and checks the exit code
// and that the marker the injected command would create never appears.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type GitHttpServer, startGitHttpServer } from "../helpers/git-http-server.ts";
import { git, TestWorkspace } from "../helpers/workspace.ts";

const t = new TestWorkspace("grex-hostile-entry-");
let server: GitHttpServer;
const serveRoot = join(t.root, "serve");

/** A bare repository served over HTTP whose .gitattributes sends every file through filter `x`. */
function served(name: string, files: Record<string, string>): string {
  const work = join(t.upstream, name);
  mkdirSync(work, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(work, rel, ".."), { recursive: true });
    writeFileSync(join(work, rel), content);
  }
  git(work, "init", "-q", "-b", "main");
  git(work, "add", "-A");
  git(work, "commit", "-q", "-m", `${name}: initial`);
  mkdirSync(serveRoot, { recursive: true });
  git(serveRoot, "clone", "-q", "--bare", work, join(serveRoot, `${name}.git`));
  return `${server.url}/${name}.git`;
}

/** A URL that the HTTP client still reaches once the newlines are stripped, carrying a filter driver that touches `marker`. */
const injected = (url: string) => url.replace("http://", "http://u\n[filter.x]\nsmudge=cd && touch pwned && cat\nclean=cd && touch pwned && cat\nrequired\n[core]\nfsmonitor=cd && touch pwned\n@");

beforeAll(async () => {
  server = await startGitHttpServer(serveRoot);
});
afterAll(async () => {
  await server.stop();
  t.cleanup();
});

/** The injected commands run `cd && touch pwned`: the marker lands in HOME. */
const markerPresent = () => existsSync(join(t.home, "pwned"));

test("a meta pack's child URL with newlines is refused (exit 4) before anything is cloned, with --dry-run too", async () => {
  const kid = served("kid", { ".gitattributes": "* filter=x\n", "a.txt": "a\n" });
  const meta = served("meta", { ".grex/pack.yaml": `schema_version: "1"\nname: meta\ntype: meta\nchildren:\n  - url: ${JSON.stringify(injected(kid))}\n    path: kid\n` });
  expect((await t.grex("init")).code).toBe(0);
  for (const dry of [["--dry-run"], []]) {
    const r = await t.grex("add", meta, "meta", ...dry);
    console.log(dry, r.code, r.stderr, markerPresent());
    expect(r.stderr).toContain("control character");
    expect(r.code).toBe(4);
    expect(markerPresent()).toBe(false);
    expect(existsSync(join(t.ws, "meta"))).toBe(false);
  }
});
