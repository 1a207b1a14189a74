// Differential: grex and the git CLI check out the same repositories — with
// attribute files of every kind, under every core.autocrlf/core.eol setting —
// and must write the same bytes and modes; `git status` must call grex's
// checkout clean, and grex must call git's checkout clean (also after every
// file was touched, so the clean conversion really runs).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backendFor } from "../../src/core/git/backend.ts";
import { unconfiguredFilters } from "../../src/core/git/worktree/convert.ts";
import { gitEnv, tempDir } from "../helpers/git-fixtures.ts";
import { prng } from "../helpers/prng.ts";

const never = () => new AbortController().signal;
let tmp: { path: string; cleanup: () => void };
beforeAll(() => {
  tmp = tempDir("grex-attrs-");
});
afterAll(() => tmp.cleanup());

/** Run git with HOME (and XDG) at `home`, so it reads the same user config grex reads. */
function gitIn(home: string, cwd: string, ...args: string[]): string {
  const env = { ...gitEnv(), HOME: home, XDG_CONFIG_HOME: join(home, ".config") };
  const p = Bun.spawnSync(["git", ...args], { cwd, env, stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed in ${cwd}: ${p.stderr.toString().trim()}`);
  return p.stdout.toString();
}

/** Run `f` with grex seeing `home` as HOME (and its XDG config). */
async function withHome<T>(home: string, f: () => Promise<T>): Promise<T> {
  const saved = { HOME: process.env.HOME, XDG: process.env.XDG_CONFIG_HOME, NOSYS: process.env.GIT_CONFIG_NOSYSTEM };
  process.env.HOME = home;
  process.env.XDG_CONFIG_HOME = join(home, ".config");
  process.env.GIT_CONFIG_NOSYSTEM = "1";
  try {
    return await f();
  } finally {
    for (const [k, v] of [["HOME", saved.HOME], ["XDG_CONFIG_HOME", saved.XDG], ["GIT_CONFIG_NOSYSTEM", saved.NOSYS]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Every file under `dir` (not .git): path → mode and bytes. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string) => {
    for (const d of readdirSync(join(dir, rel), { withFileTypes: true })) {
      if (d.name === ".git") continue;
      const p = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) walk(p);
      else {
        const st = lstatSync(join(dir, p));
        const body = st.isSymbolicLink() ? "link" : readFileSync(join(dir, p)).toString("base64");
        out.set(p, `${(st.mode & 0o170777).toString(8)} ${body}`);
      }
    }
  };
  walk("");
  return out;
}

function touchAll(dir: string): void {
  const later = new Date(Date.now() + 5000);
  for (const p of snapshot(dir).keys()) if (!lstatSync(join(dir, p)).isSymbolicLink()) utimesSync(join(dir, p), later, later);
}

const LF = "one\ntwo\nthree\n";
const CRLF = "one\r\ntwo\r\nthree\r\n";
const MIXED = "one\r\ntwo\nthree\n";
const LONE_CR = "one\rtwo\nthree\n";
const NUL = "bin\0ary\nstuff\n";
const CONTROL = `${"\x01\x02\x03".repeat(3)}text\nmore\n`;
const EOF_Z = "dos\nfile\n\x1a";

/** One body of each shape under `name`, with every extension the attributes name. */
function filesFor(exts: string[], dirs: string[]): Record<string, string> {
  const shapes: Record<string, string> = { lf: LF, crlf: CRLF, mixed: MIXED, lonecr: LONE_CR, nul: NUL, control: CONTROL, eofz: EOF_Z, empty: "" };
  const out: Record<string, string> = {};
  for (const d of dirs) for (const e of exts) for (const [k, v] of Object.entries(shapes)) out[`${d}${k}.${e}`] = v;
  return out;
}

const ROOT_ATTRS = [
  "# every kind of rule",
  "[attr]crlftext text eol=crlf",
  "*.txt text",
  "*.auto text=auto",
  "*.bat eol=crlf",
  "*.lf eol=lf",
  "*.bin binary",
  "*.raw -text",
  "*.old crlf",
  "*.oldin crlf=input",
  "*.inp text=input",
  "*.mac crlftext",
  "*.unset text",
  "*.unset !text",
  "*.autocrlf text=auto eol=crlf",
  "*.autolf text=auto eol=lf",
  "docs/** text eol=crlf",
  "/top/*.md eol=crlf",
  "nested/**/deep.* -text",
  '"with space.sp" text eol=crlf',
  "!*.neg text",
  "dirpat/ text eol=crlf",
  "*.both binary text eol=crlf",
  "",
].join("\n");

const EXTS = ["txt", "auto", "bat", "lf", "bin", "raw", "old", "oldin", "inp", "mac", "unset", "autocrlf", "autolf", "plain", "neg", "both"];

function makeSource(root: string, home: string): string {
  const src = join(root, "src");
  mkdirSync(src, { recursive: true });
  gitIn(home, src, "init", "-q", "-b", "main");
  // Commit bytes exactly as written: no conversion on the way in.
  gitIn(home, src, "config", "core.autocrlf", "false");
  const files: Record<string, string> = {
    ".gitattributes": ROOT_ATTRS,
    ...filesFor(EXTS, ["", "sub/", "docs/", "docs/a/", "top/", "nested/x/"]),
    "top/readme.md": LF,
    "nested/x/y/deep.txt": LF,
    "with space.sp": LF,
    "dirpat/in.plain": LF,
    "sub/.gitattributes": "*.plain text eol=crlf\n*.txt -text\n",
    "sub/inner/.gitattributes": "*.plain eol=lf\n",
    "sub/inner/a.plain": LF,
    "sub/inner/b.txt": LF,
    "script.sh": LF,
  };
  for (const [rel, body] of Object.entries(files)) {
    mkdirSync(join(src, rel, ".."), { recursive: true });
    writeFileSync(join(src, rel), body);
  }
  chmodSync(join(src, "script.sh"), 0o755);
  gitIn(home, src, "add", "-A");
  gitIn(home, src, "commit", "-q", "-m", "attributes of every kind");
  return src;
}

const SETTINGS: Array<Record<string, string>> = [
  {},
  { "core.autocrlf": "true" },
  { "core.autocrlf": "input" },
  { "core.eol": "crlf" },
  { "core.eol": "lf" },
  { "core.autocrlf": "false", "core.eol": "crlf" },
  { "core.autocrlf": "true", "core.eol": "lf" },
];

function makeHome(name: string, settings: Record<string, string>): string {
  const home = join(tmp.path, name);
  mkdirSync(join(home, ".config", "git"), { recursive: true });
  let text = "";
  for (const [k, v] of Object.entries(settings)) {
    const [section, key] = k.split(".") as [string, string];
    text += `[${section}]\n\t${key} = ${v}\n`;
  }
  writeFileSync(join(home, ".gitconfig"), text);
  return home;
}

async function compareClones(home: string, src: string, where: string): Promise<number> {
  const byGit = join(where, "by-git");
  const byGrex = join(where, "by-grex");
  gitIn(home, where, "clone", "-q", src, byGit);
  await withHome(home, () => backendFor(src).clone(src, byGrex, { ref: null, signal: never() }));
  const a = snapshot(byGit);
  const b = snapshot(byGrex);
  const differ = [...new Set([...a.keys(), ...b.keys()])].filter((p) => a.get(p) !== b.get(p));
  expect(differ).toEqual([]);
  // The same index entries (mode, blob, path), and git finds nothing wrong.
  expect(gitIn(home, byGrex, "ls-files", "-s")).toBe(gitIn(home, byGit, "ls-files", "-s"));
  expect(gitIn(home, byGrex, "fsck", "--no-dangling")).toBe("");
  // git calls grex's checkout clean, grex calls git's checkout clean.
  expect(gitIn(home, byGrex, "status", "--porcelain")).toBe("");
  expect(await withHome(home, () => backendFor(byGit).isDirty(byGit))).toBe(false);
  // Touched, every file is hashed again through the clean conversion: still clean for both.
  touchAll(byGit);
  touchAll(byGrex);
  expect(gitIn(home, byGrex, "status", "--porcelain")).toBe("");
  expect(await withHome(home, () => backendFor(byGit).isDirty(byGit))).toBe(false);
  expect(await withHome(home, () => backendFor(byGrex).isDirty(byGrex))).toBe(false);
  return a.size;
}

test("a clone checks out the bytes git writes, under every attribute kind and core.autocrlf/core.eol setting", async () => {
  const base = join(tmp.path, "clones");
  let files = 0;
  for (const [i, settings] of SETTINGS.entries()) {
    const home = makeHome(`home-clone-${i}`, settings);
    const root = join(base, String(i));
    mkdirSync(root, { recursive: true });
    const src = makeSource(root, home);
    files += await compareClones(home, src, root);
  }
  expect(files).toBeGreaterThan(SETTINGS.length * 700);
}, 120000);

test("core.attributesFile (and its XDG default) and info/attributes apply, with git's precedence", async () => {
  const home = makeHome("home-global", { "core.autocrlf": "false" });
  writeFileSync(join(home, ".config", "git", "attributes"), "*.g1 eol=crlf\n*.txt -text\n");
  const root = join(tmp.path, "global");
  mkdirSync(root, { recursive: true });
  const src = join(root, "src");
  mkdirSync(src);
  gitIn(home, src, "init", "-q", "-b", "main");
  for (const [rel, body] of Object.entries({ "a.g1": LF, "a.txt": LF, "b.txt": LF, ".gitattributes": "b.txt text eol=crlf\n" })) writeFileSync(join(src, rel), body);
  gitIn(home, src, "add", "-A");
  gitIn(home, src, "commit", "-q", "-m", "one");
  await compareClones(home, src, root);

  // core.attributesFile names another file, which then replaces the XDG default.
  const home2 = makeHome("home-global2", { "core.attributesFile": "~/my-attributes" });
  writeFileSync(join(home2, "my-attributes"), "*.txt eol=crlf\n");
  const root2 = join(tmp.path, "global2");
  mkdirSync(root2);
  await compareClones(home2, src, root2);

  // info/attributes wins over the tree: an update then writes what git checks out.
  const byGit = join(root2, "by-git");
  const byGrex = join(root2, "by-grex");
  for (const d of [byGit, byGrex]) {
    mkdirSync(join(d, ".git", "info"), { recursive: true });
    writeFileSync(join(d, ".git", "info", "attributes"), "*.g1 -text\nc.txt -text\n");
  }
  for (const [rel, body] of Object.entries({ "a.g1": `${LF}x\n`, "c.txt": LF, "b.txt": `${LF}y\n` })) writeFileSync(join(src, rel), body);
  gitIn(home2, src, "add", "-A");
  gitIn(home2, src, "commit", "-q", "-m", "two");
  gitIn(home2, byGit, "pull", "-q", "--ff-only");
  await withHome(home2, () => backendFor(src).update(byGrex, src, { ref: null, signal: never() }));
  const a = snapshot(byGit);
  const b = snapshot(byGrex);
  expect([...a.keys()].filter((p) => a.get(p) !== b.get(p))).toEqual([]);
  expect(readFileSync(join(byGrex, "c.txt"), "utf8")).toBe(LF);
  expect(readFileSync(join(byGrex, "a.g1"), "utf8")).toBe(`${LF}x\n`);
  expect(gitIn(home2, byGrex, "status", "--porcelain")).toBe("");
});

test("an update reads the attributes of the tree it checks out (a changed .gitattributes) as git does", async () => {
  const home = makeHome("home-update", { "core.autocrlf": "true" });
  const root = join(tmp.path, "update");
  mkdirSync(root);
  const src = makeSource(root, home);
  await compareClones(home, src, root);
  const byGit = join(root, "by-git");
  const byGrex = join(root, "by-grex");
  // Rules change and files change in the same commit.
  writeFileSync(join(src, ".gitattributes"), `${ROOT_ATTRS}*.plain eol=crlf\n*.txt -text\n`);
  writeFileSync(join(src, "new.plain"), LF);
  writeFileSync(join(src, "lf.txt"), `${LF}more\n`);
  writeFileSync(join(src, "sub", "crlf.auto"), `${CRLF}more\r\n`);
  gitIn(home, src, "add", "-A");
  gitIn(home, src, "commit", "-q", "-m", "new rules");
  gitIn(home, byGit, "pull", "-q", "--ff-only");
  await withHome(home, () => backendFor(src).update(byGrex, src, { ref: null, signal: never() }));
  const a = snapshot(byGit);
  const b = snapshot(byGrex);
  expect([...new Set([...a.keys(), ...b.keys()])].filter((p) => a.get(p) !== b.get(p))).toEqual([]);
  expect(readFileSync(join(byGrex, "new.plain"), "utf8")).toBe(CRLF);
  // The files touched before the update are hashed again under the new rules:
  // the *.txt files checked out with CRLF while they were text now read as
  // changed, for git in its own clone exactly as in grex's.
  const gitSays = gitIn(home, byGit, "status", "--porcelain");
  expect(gitSays).toContain(" M control.txt\n");
  expect(gitIn(home, byGrex, "status", "--porcelain")).toBe(gitSays);
  expect(await withHome(home, () => backendFor(byGrex).isDirty(byGrex))).toBe(true);
  expect(await withHome(home, () => backendFor(byGit).isDirty(byGit))).toBe(true);
  // Once git rewrote them, grex and git agree again. Whether git itself still
  // calls the files that are not normalized under the new rules (CRLF blobs now
  // `*.plain eol=crlf`) modified depends on the clock: written in the same
  // second as its index, git re-hashes them (racy git) and finds them changed.
  gitIn(home, byGrex, "checkout", "--", ".");
  const afterCheckout = gitIn(home, byGrex, "status", "--porcelain");
  expect(afterCheckout.split("\n").filter((l) => l && !/^ M (.*\/)?(crlf|mixed)\.plain$/.test(l))).toEqual([]);
  expect(await withHome(home, () => backendFor(byGrex).isDirty(byGrex))).toBe(afterCheckout !== "");
  // A real edit is still seen through the conversion.
  writeFileSync(join(byGrex, "lf.auto"), "changed\r\n");
  expect(await withHome(home, () => backendFor(byGrex).isDirty(byGrex))).toBe(true);
  const afterEdit = gitIn(home, byGrex, "status", "--porcelain").split("\n");
  expect(afterEdit.filter((l) => l && !afterCheckout.includes(`${l}\n`))).toEqual([" M lf.auto"]);
});

test("after random edits, grex calls a converted work tree dirty exactly when git status does", async () => {
  let dirty = 0;
  let clean = 0;
  const variants: Array<Record<string, string>> = [{ "core.autocrlf": "true" }, { "core.eol": "crlf" }, { "core.autocrlf": "input" }];
  for (const [k, settings] of variants.entries()) {
    const home = makeHome(`home-mutate-${k}`, settings);
    const root = join(tmp.path, `mutate-${k}`);
    mkdirSync(root);
    const src = makeSource(root, home);
    const dir = join(root, "clone");
    await withHome(home, () => backendFor(src).clone(src, dir, { ref: null, signal: never() }));
    const paths = [...snapshot(dir).keys()].filter((p) => !p.endsWith(".gitattributes") && !p.endsWith(".sh"));
    const rand = prng(2600 + k);
    const edits: Array<[string, (b: Buffer) => Buffer]> = [
      ["crlf→lf", (b) => Buffer.from(b.toString("latin1").replace(/\r\n/g, "\n"), "latin1")],
      ["lf→crlf", (b) => Buffer.from(b.toString("latin1").replace(/\r?\n/g, "\r\n"), "latin1")],
      ["append", (b) => Buffer.concat([b, Buffer.from("x\n")])],
      ["nul", (b) => Buffer.concat([b, Buffer.from([0])])],
      ["lone cr", (b) => Buffer.concat([Buffer.from("\r"), b])],
      ["same", (b) => b],
      ["drop last byte", (b) => b.subarray(0, Math.max(0, b.length - 1))],
    ];
    for (let i = 0; i < 40; i++) {
      const p = paths[Math.floor(rand() * paths.length)] as string;
      const [what, edit] = edits[Math.floor(rand() * edits.length)] as [string, (b: Buffer) => Buffer];
      const abs = join(dir, p);
      writeFileSync(abs, edit(readFileSync(abs)));
      const later = new Date(Date.now() + 10000 + i * 1000); // a stat change git and grex must look behind
      utimesSync(abs, later, later);
      const grexSays = await withHome(home, () => backendFor(dir).isDirty(dir));
      const gitSays = gitIn(home, dir, "status", "--porcelain") !== "";
      expect({ p, what, grexSays }).toEqual({ p, what, grexSays: gitSays });
      if (gitSays) dirty++;
      else clean++;
      gitIn(home, dir, "checkout", "--", p); // back to the checked-out version
    }
  }
  expect(dirty).toBeGreaterThan(30);
  expect(clean).toBeGreaterThan(5);
}, 120000);

const FILTER = `#!/bin/sh
# smudge: append a line naming the file; clean: drop it again.
case "$1" in
  smudge) cat; printf 'smudged:%s\\n' "$2" ;;
  clean) sed '/^smudged:/d' ;;
  fail) cat >/dev/null; echo "filter broke" >&2; exit 3 ;;
esac
`;

test("a configured filter driver runs as git runs it (stdin/stdout, %f); an unconfigured one is reported, content kept", async () => {
  const home = makeHome("home-filter", {});
  const script = join(home, "fake-filter");
  writeFileSync(script, FILTER);
  chmodSync(script, 0o755);
  writeFileSync(join(home, ".gitconfig"), `[filter "fake"]\n\tsmudge = ${script} smudge %f\n\tclean = ${script} clean %f\n`);
  const root = join(tmp.path, "filter");
  mkdirSync(root);
  const src = join(root, "src");
  mkdirSync(src);
  gitIn(home, src, "init", "-q", "-b", "main");
  const files = {
    ".gitattributes": "*.f filter=fake\n*.lfs filter=lfs diff=lfs merge=lfs -text\n*.fc filter=fake eol=crlf\n",
    "a.f": LF,
    "dir/it's b.f": LF,
    "c.fc": LF,
    "big.lfs": "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 3\n",
  };
  for (const [rel, body] of Object.entries(files)) {
    mkdirSync(join(src, rel, ".."), { recursive: true });
    writeFileSync(join(src, rel), body);
  }
  gitIn(home, src, "add", "-A");
  gitIn(home, src, "commit", "-q", "-m", "filtered");
  await compareClones(home, src, root);
  const byGrex = join(root, "by-grex");
  expect(readFileSync(join(byGrex, "dir", "it's b.f"), "utf8")).toBe(`${LF}smudged:dir/it's b.f\n`);
  expect(readFileSync(join(byGrex, "c.fc"), "utf8")).toBe(`${CRLF}smudged:c.fc\n`);
  // lfs is named but not configured: kept as stored, and reported.
  expect(readFileSync(join(byGrex, "big.lfs"), "utf8")).toBe(files["big.lfs"]);
  expect(await withHome(home, async () => unconfiguredFilters(byGrex, join(byGrex, ".git")))).toEqual(["lfs"]);

  // A required filter that fails stops the checkout with one sentence naming file and driver.
  const home2 = makeHome("home-filter2", {});
  writeFileSync(join(home2, ".gitconfig"), `[filter "fake"]\n\tsmudge = ${script} fail\n\trequired = true\n`);
  const err = await withHome(home2, () => backendFor(src).clone(src, join(root, "by-grex-fail"), { ref: null, signal: never() })).catch((e: unknown) => e);
  expect(String((err as Error).message)).toMatch(/smudge filter 'fake' failed \(exit 3: filter broke\)/);
  // An optional one that fails leaves the content as stored, as git does.
  writeFileSync(join(home2, ".gitconfig"), `[filter "fake"]\n\tsmudge = ${script} fail\n`);
  const root3 = join(tmp.path, "filter3");
  mkdirSync(root3);
  await compareClones(home2, src, root3);
  expect(readFileSync(join(root3, "by-grex", "a.f"), "utf8")).toBe(LF);
});

test("status and doctor name the filter drivers a pack needs and no git config defines (a note, not a failure)", async () => {
  const { TestWorkspace } = await import("../helpers/workspace.ts");
  const t = new TestWorkspace("grex-attrs-ws-");
  try {
    const url = t.repo("filtered", { ".gitattributes": "*.bin filter=lfs diff=lfs merge=lfs -text\n*.x filter=other\n", "a.bin": "pointer\n", "b.x": "x\n", "plain.txt": "hi\n" });
    const run = async (...argv: string[]) => {
      const p = t.spawnGrex(argv);
      const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      if (code !== 0 && argv[0] !== "doctor") console.error(err);
      return { code, json: JSON.parse(out) as Record<string, unknown> };
    };
    expect((await run("init", "--json")).code).toBe(0);
    expect((await run("add", url, "--no-install", "--json")).code).toBe(0);
    type Row = { id: string; missing_filters: string[]; drift: string };
    const status = await run("status", "--json");
    const row = (status.json.packs as Row[])[0] as Row;
    expect(row.missing_filters).toEqual(["lfs", "other"]);
    expect(status.code).toBe(0);
    const doctor = await run("doctor", "--json");
    const notes = (doctor.json.findings as Array<{ check: string; severity: string; pack: string; detail: string }>).filter((f) => f.check === "git-filters");
    expect(notes.map((f) => [f.severity, f.pack, f.detail.includes("'lfs'") || f.detail.includes("'other'")])).toEqual([
      ["ok", row.id, true],
      ["ok", row.id, true],
    ]);
    // Configured (here: in ~/.gitconfig), a driver is no longer reported.
    writeFileSync(join(t.home, ".gitconfig"), '[filter "lfs"]\n\tclean = cat\n\tsmudge = cat\n\trequired = true\n');
    expect(((await run("status", "--json")).json.packs as Row[])[0]?.missing_filters).toEqual(["other"]);
  } finally {
    t.cleanup();
  }
});

test("an interrupted update of converted files is recognised as the move's own work and finished", async () => {
  const { writeJournal } = await import("../../src/core/git/worktree/checkout-journal.ts");
  const home = makeHome("home-resume", {});
  const root = join(tmp.path, "resume");
  mkdirSync(root);
  const src = join(root, "src");
  mkdirSync(src);
  gitIn(home, src, "init", "-q", "-b", "main");
  for (const [rel, body] of Object.entries({ ".gitattributes": "*.txt eol=crlf\n", "a.txt": LF, "b.txt": LF })) writeFileSync(join(src, rel), body);
  gitIn(home, src, "add", "-A");
  gitIn(home, src, "commit", "-q", "-m", "one");
  const from = gitIn(home, src, "rev-parse", "HEAD").trim();
  const dir = join(root, "clone");
  await withHome(home, () => backendFor(src).clone(src, dir, { ref: null, signal: never() }));
  writeFileSync(join(src, "a.txt"), `${LF}a2\n`);
  writeFileSync(join(src, "b.txt"), `${LF}b2\n`);
  gitIn(home, src, "commit", "-q", "-am", "two");
  const to = gitIn(home, src, "rev-parse", "HEAD").trim();
  // The state a killed update leaves: objects fetched, journal written, a.txt already rewritten (converted), b.txt not yet.
  await withHome(home, () => backendFor(src).fetch(dir, src, { signal: never() }));
  writeJournal(join(dir, ".git"), { from, to, branch: "main" });
  writeFileSync(join(dir, "a.txt"), `${CRLF}a2\r\n`);
  expect(await withHome(home, () => backendFor(dir).isDirty(dir))).toBe(false);
  await withHome(home, () => backendFor(src).update(dir, src, { ref: null, signal: never() }));
  expect(readFileSync(join(dir, "a.txt"), "utf8")).toBe(`${CRLF}a2\r\n`);
  expect(readFileSync(join(dir, "b.txt"), "utf8")).toBe(`${CRLF}b2\r\n`);
  expect(gitIn(home, dir, "status", "--porcelain")).toBe("");
  expect(gitIn(home, dir, "rev-parse", "HEAD").trim()).toBe(to);
});
