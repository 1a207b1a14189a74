// `npm run demo`: grex's main job on a throwaway workspace.
// Builds three small upstream repositories (a meta pack with a declarative
// child, and a plain repo), then runs the real CLI against them: init → add →
// ls --tree → sync → status. Everything lives under one temp directory,
// including the HOME that the declarative pack links into; it is removed when
// the demo ends, however it ends (GREX_DEMO_KEEP=1 keeps it to look around).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = mkdtempSync(join(tmpdir(), "grex-demo-"));
const keep = process.env.GREX_DEMO_KEEP === "1";
// "exit" also runs after process.exit() and an uncaught error.
process.on("exit", () => {
  if (!keep) rmSync(root, { recursive: true, force: true });
});
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => process.exit(130));
const upstream = join(root, "upstream");
const home = join(root, "home");
const ws = join(root, "workspace");
mkdirSync(home, { recursive: true });
mkdirSync(ws, { recursive: true });

const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: "grex demo",
  GIT_AUTHOR_EMAIL: "demo@example.invalid",
  GIT_COMMITTER_NAME: "grex demo",
  GIT_COMMITTER_EMAIL: "demo@example.invalid",
};

function git(cwd: string, ...args: string[]): void {
  const r = Bun.spawnSync(["git", ...args], { cwd, env: gitEnv, stdout: "ignore", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr.toString()}`);
}

function makeRepo(name: string, files: Record<string, string>): string {
  const dir = join(upstream, name);
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(dir, rel, ".."), { recursive: true });
    writeFileSync(join(dir, rel), content);
  }
  git(dir, "init", "-q", "-b", "main");
  git(dir, "add", "-A");
  git(dir, "commit", "-q", "-m", `${name}: initial`);
  return dir;
}

const themes = makeRepo("themes", {
  ".grex/pack.yaml": [
    'schema_version: "1"',
    "name: themes",
    "type: declarative",
    "actions:",
    "  - mkdir: { path: $HOME/.config/demo }",
    "  - symlink: { src: files/theme.conf, dst: $HOME/.config/demo/theme.conf }",
    "",
  ].join("\n"),
  "files/theme.conf": "colour = solarized\n",
});
makeRepo("dev-env", {
  ".grex/pack.yaml": [
    'schema_version: "1"',
    "name: dev-env",
    "type: meta",
    "children:",
    `  - url: ${themes}`,
    "",
  ].join("\n"),
  "README.md": "A meta pack: it owns the themes pack.\n",
});
makeRepo("notes", { "notes.md": "# Notes\n" });

// GREX_BIN=dist/grex runs the demo with the compiled binary, with no bun on PATH.
const grexEntry = join(import.meta.dir, "..", "src", "cli", "main.ts");
const grexCmd = process.env.GREX_BIN ? [process.env.GREX_BIN] : [process.execPath, grexEntry];
const childPath = process.env.GREX_BIN
  ? (process.env.PATH ?? "").split(":").filter((d) => !Bun.which("bun", { PATH: d })).join(":")
  : process.env.PATH;
function grex(...args: string[]): void {
  process.stdout.write(`\n$ grex ${args.join(" ")}\n`);
  const r = Bun.spawnSync([...grexCmd, ...args], {
    cwd: ws,
    env: { ...gitEnv, HOME: home, PATH: childPath },
    stdout: "inherit",
    stderr: "inherit",
  });
  if (r.exitCode !== 0) {
    process.stderr.write(`demo: grex ${args.join(" ")} exited ${r.exitCode}\n`);
    process.exit(r.exitCode ?? 1);
  }
}

process.stdout.write(`Demo workspace: ${ws}\n(HOME for pack actions: ${home}; ${keep ? "kept after the demo" : "removed after the demo, GREX_DEMO_KEEP=1 keeps it"})\n`);
grex("init");
grex("add", join(upstream, "dev-env"));
grex("add", join(upstream, "notes"));
grex("ls", "--tree");
git(join(upstream, "notes"), "commit", "-q", "--allow-empty", "-m", "notes: upstream moves on");
grex("sync");
grex("status");
process.stdout.write(`\nThe themes pack linked ${join(home, ".config/demo/theme.conf")} into the demo HOME.\n`);
