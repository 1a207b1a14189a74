// `grex completion bash|zsh|fish` loaded into the real shells: each script
// completes a verb, a verb's flags and the workspace's pack ids. A shell that
// is not installed is skipped (with its name in the test title).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

// Real processes on a shared machine: give them room.
setDefaultTimeout(60_000);

let t: TestWorkspace;
let bin: string;
const scripts: Record<string, string> = {};

beforeAll(async () => {
  t = new TestWorkspace("grex-completion-");
  bin = join(t.root, "bin");
  mkdirSync(bin);
  // The scripts ask `grex completion ids` for pack ids: a `grex` on PATH.
  writeFileSync(join(bin, "grex"), `#!/bin/sh\nexec '${process.execPath}' '${GREX_MAIN}' "$@"\n`);
  chmodSync(join(bin, "grex"), 0o755);
  await t.grex("init");
  await t.grex("add", t.repo("meta-basic"), "tools", "--no-install");
  for (const shell of ["bash", "zsh", "fish"]) {
    const r = await t.grex("completion", shell);
    expect(r.code).toBe(0);
    scripts[shell] = join(t.root, `grex.${shell}`);
    writeFileSync(scripts[shell] as string, r.stdout);
  }
});
afterAll(() => t.cleanup());

function inShell(shell: string, script: string): string {
  const r = Bun.spawnSync([shell, "-c", script], {
    cwd: t.ws,
    env: { ...t.env, PATH: `${bin}:${process.env.PATH}` },
    stdout: "pipe",
    stderr: "pipe",
  });
  expect(r.stderr.toString()).toBe("");
  expect(r.exitCode).toBe(0);
  return r.stdout.toString();
}

const have = (shell: string) => Bun.which(shell) !== null;

describe("completion scripts in real shells", () => {
  test.skipIf(!have("bash"))("bash: verbs, flags, pack ids", () => {
    const complete = (...words: string[]) =>
      inShell("bash", `source '${scripts.bash}'; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _grex; printf '%s\\n' "\${COMPREPLY[@]}"`);
    expect(complete("grex", "sy")).toBe("sync\n");
    expect(complete("grex", "sync", "--fa")).toBe("--fail-fast\n");
    expect(complete("grex", "sync", "--js")).toBe("--json\n");
    expect(complete("grex", "rm", "")).toBe("tools\n");
    expect(complete("grex", "completion", "z")).toBe("zsh\n");
    expect(inShell("bash", `source '${scripts.bash}'; complete -p grex`)).toBe("complete -F _grex grex\n");
  });

  test.skipIf(!have("zsh"))("zsh: verbs, flags, pack ids (compinit loaded)", () => {
    const load = `autoload -Uz compinit; compinit -u -D; source '${scripts.zsh}'`;
    expect(inShell("zsh", `${load}; _grex_words '' sy`)).toBe("sync\n");
    expect(inShell("zsh", `${load}; _grex_words sync --fa`)).toBe("--fail-fast\n");
    expect(inShell("zsh", `${load}; _grex_words sync ''`)).toBe("tools\n");
    expect(inShell("zsh", `${load}; print -r -- $_comps[grex]`)).toBe("_grex\n");
  });

  test.skipIf(!have("fish"))("fish: verbs, flags, pack ids", () => {
    const complete = (line: string) => inShell("fish", `source '${scripts.fish}'; complete -C '${line}'`);
    expect(complete("grex sy")).toBe("sync\tSync packs recursively\n");
    expect(complete("grex sync --fa")).toMatch(/^--fail-fast\t/);
    expect(complete("grex sync ")).toContain("tools");
    expect(complete("grex ls --fi")).toMatch(/^--filter\t/);
  });
});

describe("completion command", () => {
  test("an unknown shell is a usage error with a suggestion", async () => {
    const r = await t.grex("completion", "bsh");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("grex: Unknown shell 'bsh'. Did you mean 'bash'? Use `grex completion bash`, `zsh` or `fish`.\n");
  });
});
