// grex runs wherever the user stands, often inside a pack: a directory whose
// files come from someone else's repository. Bun reads two files from the
// working directory at start unless told not to: `.env` (its variables join
// the process environment, so every git, hook and exec child would see them)
// and `bunfig.toml` (whose `preload` runs code before grex does). Neither may
// reach grex, built (scripts/compile.ts) or run from source through its
// shebang (a checkout's `grex`). The npm package's launcher, which runs one or
// the other, is checked the same way in npm-install.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { grexBuildCommand } from "../../scripts/compile.ts";
import { GIT_ENV, GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

let t: TestWorkspace;
let bin = "";
const marker = () => join(t.ws, "preload-ran");

beforeAll(() => {
  t = new TestWorkspace("grex-untrusted-cwd-");
  bin = join(t.root, "grex");
  const build = Bun.spawnSync(grexBuildCommand(bin), { stdout: "pipe", stderr: "pipe" });
  if (build.exitCode !== 0) throw new Error(`bun build failed: ${build.stderr.toString()}`);
  // A pack to exec in, and the two hostile files where grex is run.
  const url = t.repo("plain", { "README.md": "r\n" });
  writeFileSync(join(t.ws, "bunfig.toml"), 'preload = ["./preload.js"]\n');
  writeFileSync(join(t.ws, "preload.js"), `require("node:fs").writeFileSync(${JSON.stringify(marker())}, "ran");\n`);
  writeFileSync(join(t.ws, ".env"), "GREX_UNTRUSTED_PROBE=from-dotenv\n");
  run([bin], ["init"]);
  run([bin], ["add", url, "plain"]);
}, 120_000);
afterAll(() => t.cleanup());

function run(cmd: string[], argv: string[]): { code: number; stdout: string; stderr: string } {
  const env: Record<string, string | undefined> = { ...process.env, ...GIT_ENV, HOME: t.home, GREX_UNTRUSTED_PROBE: undefined };
  // The shebang finds bun on PATH, as an installed `grex` command would.
  env.PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ""}`;
  const r = Bun.spawnSync([...cmd, ...argv], { cwd: t.ws, env, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

describe.each([
  ["the compiled binary", () => [bin]],
  ["the source, through its shebang", () => [GREX_MAIN]],
])("%s", (_name, cmd) => {
  test("runs no preload from a bunfig.toml in the working directory", () => {
    const r = run(cmd(), ["doctor", "--json"]);
    expect(r.stderr).toBe("");
    expect(existsSync(marker())).toBe(false);
  });

  test("takes no variables from a .env in the working directory, nor passes them on", () => {
    const r = run(cmd(), ["exec", "--", "sh", "-c", 'echo "probe=[$GREX_UNTRUSTED_PROBE]"']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("probe=[]");
  });
});
