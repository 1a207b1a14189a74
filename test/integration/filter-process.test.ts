// git's long-running filter process (filter.<driver>.process): one process per
// checkout and per status check, started once however many files it filters,
// writing what `git clone` writes with the same config (differential); the
// clean side serves status; a required driver's failure (status=error, or a
// process that dies mid-answer) fails the add with one sentence and leaves
// nothing behind; an optional one's keeps the file as stored.
import { afterAll, expect, test } from "bun:test";
import { existsSync, readFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { GIT_ENV, TestWorkspace } from "../helpers/workspace.ts";

const t = new TestWorkspace("grex-filter-process-");
afterAll(() => t.cleanup());
const FILTER = join(import.meta.dir, "..", "fixtures", "filter-process", "rot13-filter.ts");
const log = join(t.root, "filter.log");

async function run(...argv: string[]) {
  const p = t.spawnGrex(argv);
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

function gitHome(cwd: string, ...args: string[]): string {
  const p = Bun.spawnSync(["git", ...args], { cwd, env: { ...process.env, ...GIT_ENV, HOME: t.home }, stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${p.stderr.toString()}`);
  return p.stdout.toString();
}

/** The user's config: driver `rot` as a long-running process (and a per-file smudge that must not run). */
function configure(opts: { required?: boolean; args?: string } = {}) {
  const marker = join(t.root, "per-file-smudge-ran");
  writeFileSync(
    join(t.home, ".gitconfig"),
    `[filter "rot"]\n\tprocess = '${process.execPath}' '${FILTER}' '${log}' ${opts.args ?? ""}\n\tsmudge = touch '${marker}'; cat\n\tclean = touch '${marker}'; cat\n\trequired = ${opts.required === true}\n`,
  );
  rmSync(log, { force: true });
  return marker;
}
const logLines = () => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : []);

function files(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name === ".git" || e.name === ".grex") continue;
      if (e.isDirectory()) walk(join(d, e.name));
      else out.set(relative(dir, join(d, e.name)), readFileSync(join(d, e.name), "latin1"));
    }
  };
  walk(dir);
  return out;
}

const content: Record<string, string> = { ".gitattributes": "*.txt filter=rot\n", "plain.dat": "Not Filtered\n" };
for (let i = 0; i < 40; i++) content[`d${i % 4}/f${i}.txt`] = `File number ${i}\nThe Quick Brown Fox\n`.repeat(i + 1);
content["big.txt"] = "Large Blob ".repeat(20000); // more than one pkt-line each way
content["empty.txt"] = "";

test("one filter process for a whole checkout, writing what git writes; status cleans through the same driver, once", async () => {
  expect((await run("init")).code).toBe(0);
  const up = t.repo("rot", content);
  const marker = configure();
  gitHome(t.root, "clone", "-q", up, join(t.root, "git-clone"));
  expect(logLines().filter((l) => l === "start").length).toBe(1);
  rmSync(log, { force: true });

  const r = await run("add", up, "rot");
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const pack = join(t.ws, "rot");
  const lines = logLines();
  expect(lines.filter((l) => l === "start")).toEqual(["start"]);
  expect(lines.filter((l) => l.startsWith("smudge ")).length).toBe(42);
  expect(existsSync(marker)).toBe(false); // process wins over smudge, as in git
  expect(files(pack)).toEqual(files(join(t.root, "git-clone")));
  expect(readFileSync(join(pack, "d0/f0.txt"), "utf8")).toBe("Svyr ahzore 0\nGur Dhvpx Oebja Sbk\n");
  expect(gitHome(pack, "status", "--porcelain")).toBe("");

  // status re-hashes every touched file through one clean process.
  const old = new Date(Date.now() - 60_000);
  for (const f of files(pack).keys()) utimesSync(join(pack, f), old, old);
  rmSync(log, { force: true });
  const st = await run("status", "--json");
  expect(st.code).toBe(0);
  const row = (JSON.parse(st.stdout).packs as Array<{ id: string; drift: string }>).find((p) => p.id === "rot");
  expect(row?.drift).not.toBe("dirty");
  const cleaned = logLines();
  expect(cleaned.filter((l) => l === "start")).toEqual(["start"]);
  expect(cleaned.filter((l) => l.startsWith("clean ")).length).toBeGreaterThanOrEqual(42);

  writeFileSync(join(pack, "d1/f1.txt"), "Edited\n");
  const st2 = await run("status", "--json");
  expect((JSON.parse(st2.stdout).packs as Array<{ id: string; drift: string }>).find((p) => p.id === "rot")?.drift).toBe("dirty");
  writeFileSync(join(pack, "d1/f1.txt"), readFileSync(join(t.root, "git-clone", "d1/f1.txt")));

  // An update (checkout of the difference) starts one process too.
  t.commit(up, { "new1.txt": "New One\n", "new2.txt": "New Two\n", "d0/f0.txt": "Changed\n" });
  rmSync(log, { force: true });
  const s = await run("sync");
  expect(s.stderr).toBe("");
  expect(s.code).toBe(0);
  // The dirty checks before the update clean through their own processes; the checkout's three files go through one.
  const synced = logLines();
  const first = synced.findIndex((l) => l.startsWith("smudge "));
  expect(synced[first - 1]).toBe("start");
  expect(synced.slice(first).sort()).toEqual(["smudge d0/f0.txt", "smudge new1.txt", "smudge new2.txt"]);
  expect(readFileSync(join(pack, "new1.txt"), "utf8")).toBe("Arj Bar\n");
});

test("a required driver answering status=error fails the add with one sentence naming the driver and the file; nothing is left", async () => {
  const up = t.repo("rot-err", content);
  configure({ required: true, args: "error-on=d2/f2.txt" });
  const r = await run("add", up, "rot-err");
  expect(r.code).toBe(4);
  const msg = r.stderr.trim();
  expect(msg.split("\n").length).toBe(1);
  expect(msg).toContain("'rot'");
  expect(msg).toContain("d2/f2.txt");
  expect(msg).toContain("status=error");
  expect(existsSync(join(t.ws, "rot-err"))).toBe(false);
  expect(logLines().filter((l) => l === "start")).toEqual(["start"]);
});

test("a required driver that dies mid-answer: one sentence with its last error line, nothing half-written", async () => {
  const up = t.repo("rot-die", content);
  configure({ required: true, args: "die-on=big.txt" });
  const r = await run("add", up, "rot-die");
  expect(r.code).toBe(4);
  const msg = r.stderr.trim();
  expect(msg.split("\n").length).toBe(1);
  expect(msg).toContain("big.txt");
  expect(msg).toContain("rot13: crashed on big.txt");
  expect(existsSync(join(t.ws, "rot-die"))).toBe(false);
  expect(logLines().filter((l) => l === "start")).toEqual(["start"]); // not restarted for the files queued behind

});

test("an optional driver's failures keep those files as stored, the rest filtered (as git)", async () => {
  const up = t.repo("rot-opt", content);
  configure({ args: "error-on=d2/f2.txt die-on=big.txt" });
  gitHome(t.root, "clone", "-q", up, join(t.root, "git-clone-opt"));
  const r = await run("add", up, "rot-opt");
  expect(r.code).toBe(0);
  const pack = join(t.ws, "rot-opt");
  expect(readFileSync(join(pack, "d2/f2.txt"), "utf8")).toBe(content["d2/f2.txt"] as string);
  expect(readFileSync(join(pack, "big.txt"), "utf8")).toBe(content["big.txt"] as string);
  expect(readFileSync(join(pack, "d0/f0.txt"), "utf8")).toBe("Svyr ahzore 0\nGur Dhvpx Oebja Sbk\n");
  expect(files(pack)).toEqual(files(join(t.root, "git-clone-opt")));
});

test("a required driver whose process will not talk: one sentence with its error line", async () => {
  const up = t.repo("rot-mute", content);
  configure({ required: true, args: "no-handshake" });
  const r = await run("add", up, "rot-mute");
  expect(r.code).toBe(4);
  const msg = r.stderr.trim();
  expect(msg.split("\n").length).toBe(1);
  expect(msg).toContain("(filter.rot.process)");
  expect(msg).toContain("rot13: refusing to talk");
  expect(existsSync(join(t.ws, "rot-mute"))).toBe(false);
});

test("status=abort: the process gets no more smudge requests; the rest of the checkout is written as stored", async () => {
  const up = t.repo("rot-abort", content);
  configure({ args: "abort-on=d0/f0.txt" });
  const r = await run("add", up, "rot-abort");
  expect(r.code).toBe(0);
  const lines = logLines();
  expect(lines.filter((l) => l === "start")).toEqual(["start"]);
  expect(lines[lines.length - 1]).toBe("smudge d0/f0.txt"); // nothing asked after the abort
  const smudged = new Set(lines.filter((l) => l.startsWith("smudge ") && l !== "smudge d0/f0.txt").map((l) => l.slice(7)));
  const pack = join(t.ws, "rot-abort");
  for (const [rel, text] of Object.entries(content)) {
    if (!rel.endsWith(".txt")) continue;
    const rot = text.replace(/[a-z]/gi, (c) => String.fromCharCode(((c.toLowerCase().charCodeAt(0) - 84) % 26) + (c < "a" ? 65 : 97)));
    expect(readFileSync(join(pack, rel), "utf8")).toBe(smudged.has(rel) ? rot : text);
  }
});

test("an update through a required driver that dies: one sentence, no file half-written, and the next sync finishes it", async () => {
  if (!existsSync(join(t.ws, "grex.jsonl"))) await run("init"); // when run alone
  configure();
  const up = t.repo("rot-upd", content);
  expect((await run("add", up, "rot-upd")).code).toBe(0);
  const pack = join(t.ws, "rot-upd");
  const before = readFileSync(join(pack, "big.txt"), "latin1");
  const next = { "d3/f3.txt": "Updated Three\n", "zz.txt": "Zebra\n", "big.txt": "Bigger Blob ".repeat(30000) };
  t.commit(up, next);
  configure({ required: true, args: "die-on=big.txt" });
  const r = await run("sync");
  expect(r.code).toBe(4);
  const msg = r.stderr.trim();
  expect(msg.split("\n").length).toBe(1);
  expect(msg).toContain("rot13: crashed on big.txt");
  // Each file is either its old checkout or its new one, never a part.
  expect(readFileSync(join(pack, "big.txt"), "latin1")).toBe(before);
  configure();
  const again = await run("sync");
  expect(again.stderr).toBe("");
  expect(again.code).toBe(0);
  gitHome(t.root, "clone", "-q", up, join(t.root, "git-clone-upd"));
  expect(files(pack)).toEqual(files(join(t.root, "git-clone-upd")));
  expect(gitHome(pack, "status", "--porcelain")).toBe("");
});

test("add --dry-run starts no filter process; one only the pack's .git/config names never runs", async () => {
  if (!existsSync(join(t.ws, "grex.jsonl"))) await run("init"); // when run alone
  const up = t.repo("rot-dry", content);
  configure({ required: true });
  const r = await run("add", "--dry-run", up, "rot-dry");
  expect(r.code).toBe(0);
  expect(existsSync(log)).toBe(false);
  rmSync(join(t.home, ".gitconfig"));
  expect((await run("add", up, "rot-dry")).code).toBe(0);
  const pack = join(t.ws, "rot-dry");
  expect(readFileSync(join(pack, "d0/f0.txt"), "utf8")).toBe(content["d0/f0.txt"] as string);
  const cfg = join(pack, ".git", "config");
  writeFileSync(cfg, `${readFileSync(cfg, "utf8")}[filter "rot"]\n\tprocess = '${process.execPath}' '${FILTER}' '${log}'\n\trequired = true\n`);
  const old = new Date(Date.now() - 60_000);
  for (const f of files(pack).keys()) utimesSync(join(pack, f), old, old);
  const st = await run("status", "--json");
  expect(st.code).toBe(0);
  expect(existsSync(log)).toBe(false);
  const row = (JSON.parse(st.stdout).packs as Array<{ id: string; drift: string; missing_filters: string[] }>).find((p) => p.id === "rot-dry");
  expect(row?.missing_filters).toEqual(["rot"]);
});

test("status through a required clean process that answers status=error: the pack is invalid, with one sentence", async () => {
  if (!existsSync(join(t.ws, "grex.jsonl"))) await run("init"); // when run alone
  configure();
  const up = t.repo("rot-st", content);
  expect((await run("add", up, "rot-st")).code).toBe(0);
  configure({ required: true, args: "error-on=d1/f5.txt" });
  const old = new Date(Date.now() - 60_000);
  utimesSync(join(t.ws, "rot-st", "d1/f5.txt"), old, old);
  const st = await run("status", "--json");
  expect(st.code).not.toBe(0); // 3 alone; the other tests' packs may add their own
  const row = (JSON.parse(st.stdout).packs as Array<{ id: string; drift: string; error: string | { message: string } | null }>).find((p) => p.id === "rot-st");
  expect(row?.drift).toBe("invalid");
  expect(JSON.stringify(row?.error)).toContain("d1/f5.txt: the clean filter 'rot' (filter.rot.process) failed (the filter process answered status=error)");
  // A dirty pack whose change counts hit the failing file (rot-dry: stored bytes, which clean to other blobs) is its own invalid row too, not the whole report's failure.
  if (existsSync(join(t.ws, "rot-dry"))) expect((JSON.parse(st.stdout).packs as Array<{ id: string; drift: string }>).find((p) => p.id === "rot-dry")?.drift).toBe("invalid");
});
