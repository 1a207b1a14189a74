// Churn of the committed workspace files (`bun bench/churn.ts`): a workspace
// of nine packs (declarative, scripted, a meta pack with two children, plain
// repositories) is synced once, then `sync`, `status`, `ls` and `doctor` run
// ten times each with nothing upstream changed. Prints how many bytes of
// grex.jsonl and grex.lock.jsonl those no-op runs changed (goal: 0), how many
// times each file was rewritten (its mtime moved), and the size of the
// runtime journal under .grex/.state/. GREX_MAIN=<path to src/cli/main.ts>
// measures another checkout (the numbers before a change).
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const RUNS = Number(process.env.CHURN_RUNS ?? 10);
const FIXTURES = join(import.meta.dir, "..", "test", "fixtures");
const MAIN = process.env.GREX_MAIN ?? join(import.meta.dir, "..", "src", "cli", "main.ts");
const root = mkdtempSync(join(tmpdir(), "grex-churn-"));
const home = join(root, "home");
const ws = join(root, "ws");
const up = join(root, "up");
for (const d of [home, ws, up]) mkdirSync(d, { recursive: true });
const env = {
  ...process.env,
  HOME: home,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_AUTHOR_NAME: "b",
  GIT_AUTHOR_EMAIL: "b@example.invalid",
  GIT_COMMITTER_NAME: "b",
  GIT_COMMITTER_EMAIL: "b@example.invalid",
};

function sh(cwd: string, ...argv: string[]): string {
  const r = Bun.spawnSync(argv, { cwd, env, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}
function repo(name: string, fixture?: string): string {
  const dir = join(up, name);
  if (fixture) cpSync(join(FIXTURES, fixture), dir, { recursive: true });
  else {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "README.md"), `${name}\n`);
  }
  sh(dir, "git", "init", "-q", "-b", "main");
  sh(dir, "git", "add", "-A");
  sh(dir, "git", "commit", "-q", "-m", "init");
  return dir;
}
const grex = (...argv: string[]) => sh(ws, process.execPath, MAIN, ...argv);

try {
  repo("child-a", "child-a");
  repo("child-b", "child-b");
  const packs = [
    repo("decl", "declarative-basic"),
    repo("scripted", "scripted-basic"),
    repo("meta", "meta-basic"),
    ...Array.from({ length: 6 }, (_, i) => repo(`plain${i}`)),
  ];
  grex("init", "--no-clone");
  for (const p of packs) grex("add", p);
  grex("sync");
  const files = ["grex.jsonl", "grex.lock.jsonl"];
  const read = () => files.map((f) => (existsSync(join(ws, f)) ? readFileSync(join(ws, f)) : Buffer.alloc(0)));
  const changed = (a: Buffer, b: Buffer) => {
    let n = Math.abs(a.length - b.length);
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) n++;
    return n;
  };
  const mtimes = () => files.map((f) => (existsSync(join(ws, f)) ? statSync(join(ws, f)).mtimeMs : 0));
  for (const verb of ["sync", "status", "ls", "doctor"]) {
    const before = read();
    const rewrites = files.map(() => 0);
    for (let i = 0; i < RUNS; i++) {
      const m0 = mtimes();
      try {
        grex(verb);
      } catch {
        // doctor exits non-zero on findings: its writes are what counts here
      }
      mtimes().forEach((m, k) => {
        if (m !== m0[k]) rewrites[k] = (rewrites[k] as number) + 1;
      });
    }
    const after = read();
    const per = files.map((f, i) => `${f} ${changed(before[i] as Buffer, after[i] as Buffer)} B changed, ${rewrites[i]} rewrites`).join("; ");
    console.log(`${RUNS} no-op ${verb.padEnd(6)}: ${per}`);
  }
  const journal = join(ws, ".grex", ".state", "journal.jsonl");
  console.log(`grex.jsonl lines: ${readFileSync(join(ws, "grex.jsonl"), "utf8").split("\n").length - 1}; journal: ${existsSync(journal) ? readFileSync(journal).length : 0} B`);
} finally {
  if (!process.env.CHURN_KEEP) rmSync(root, { recursive: true, force: true });
}
