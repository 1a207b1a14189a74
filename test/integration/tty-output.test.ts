// What a person sees at a terminal: grex run under a real pseudo-terminal
// (`script`), so stdout and stderr are TTYs. Columns line up, states are
// coloured, NO_COLOR=1 and --plain take the colour away, and Ctrl-C during a
// sync ends with one clean line (not glued to the progress bar) and exit 130.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

// Real processes on a shared machine: give them room.
setDefaultTimeout(60_000);

const hasScript = Bun.which("script") !== null;
const SGR = /\x1b\[[0-9;]*m/g;
let t: TestWorkspace;

beforeAll(async () => {
  t = new TestWorkspace("grex-tty-");
  for (const name of ["child-a", "child-b"]) t.repo(name);
  await t.grex("init");
  expect((await t.grex("add", t.repo("meta-basic"), "dev-env")).code).toBe(0);
  expect((await t.grex("add", t.repo("notes", { "notes.md": "# notes\n" }), "notes")).code).toBe(0);
});
afterAll(() => t.cleanup());

/** Run grex in a pseudo-terminal; the terminal's \r\n become \n. */
function onTty(argv: string[], env: Record<string, string> = {}) {
  const cmd = [process.execPath, GREX_MAIN, ...argv].map((a) => `'${a}'`).join(" ");
  const r = Bun.spawnSync(["script", "-qec", cmd, "/dev/null"], {
    cwd: t.ws,
    env: { ...t.env, TERM: "xterm", NO_COLOR: "", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: r.exitCode, out: r.stdout.toString().replaceAll("\r\n", "\n") };
}

/** The column where the second field starts on each line (colour codes removed). */
function secondColumn(text: string): number[] {
  return text
    .replace(SGR, "")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => /^\s*\S+\s+/.exec(l)?.[0].length ?? -1);
}

describe.skipIf(!hasScript)("on a terminal", () => {
  test("status: aligned columns, clean in green", () => {
    const { code, out } = onTty(["status"]);
    expect(code).toBe(0);
    process.stdout.write(`--- grex status on a TTY ---\n${JSON.stringify(out)}\n`);
    expect(out).toContain("\x1b[32mclean\x1b[39m");
    expect(out).toContain("\x1b[1mdev-env/child-a\x1b[22m");
    const lines = out.split("\n");
    expect(new Set(secondColumn(lines.slice(0, -2).join("\n"))).size).toBe(1); // the table; then the summary line
    expect(out.replace(SGR, "")).toBe(
      ["dev-env            clean  main", "  dev-env/child-a  clean  main", "  dev-env/second   clean  main", "notes              clean  main", "4 packs: 4 clean", ""].join("\n"),
    );
  });

  test("ls --long: a header and aligned columns; a plain repository shows its type as --json does", () => {
    const { code, out } = onTty(["ls", "--tree"]);
    expect(code).toBe(0);
    const plain = out.replace(SGR, "");
    expect(plain).toBe(["dev-env              meta", "  └ dev-env/child-a  declarative", "  └ dev-env/second   declarative", "notes                meta", ""].join("\n"));
    expect(out).toContain("\x1b[2mdeclarative\x1b[22m");
    const long = onTty(["ls", "--long"]).out;
    expect(long.split("\n")[0]?.replace(SGR, "")).toMatch(/^ID +TYPE +URL +REF +SHA +INSTALLED +TAGS$/);
    expect(new Set(secondColumn(long)).size).toBe(1);
  });

  test("sync: coloured marks, aligned pack column, a summary line", () => {
    const { code, out } = onTty(["sync"]);
    expect(code).toBe(0);
    expect(out).toContain("\x1b[32m✓\x1b[39m");
    const lines = out.replace(SGR, "").replace(/^[^\n]*\r\x1b\[2K/gm, "").split("\n").filter((l) => l !== "");
    const rows = lines.filter((l) => l.startsWith("✓"));
    expect(rows).toHaveLength(4);
    expect(new Set(rows.map((l) => l.indexOf("up to date"))).size).toBe(1);
    expect(lines.at(-1)).toBe("4 packs: 4 ok, 0 skipped, 0 dirty, 0 failed");
  });

  for (const [what, argv, env] of [
    ["NO_COLOR=1", [], { NO_COLOR: "1" }],
    ["--plain", ["--plain"], {}],
  ] as const) {
    test(`${what} removes every colour code`, () => {
      for (const verb of ["status", "ls", "sync"]) {
        const { code, out } = onTty([verb, ...argv], env);
        expect(code).toBe(0);
        expect(out).not.toMatch(SGR);
        expect(out.length).toBeGreaterThan(10);
      }
    });
  }

  test("Ctrl-C during sync: the progress line is cleared, one line says how far it got, exit 130", async () => {
    // A pack whose setup interrupts grex itself (its parent) and then waits.
    const url = t.repo("slow", {
      ".grex/pack.yaml": 'schema_version: "1"\nname: slow\ntype: declarative\nactions:\n  - exec: { cmd: [sh, -c, "kill -INT $$PPID; sleep 5"] }\n',
    });
    expect((await t.grex("add", url, "slow", "--no-install")).code).toBe(0);
    const { code, out } = onTty(["sync", "slow"]);
    process.stdout.write(`--- Ctrl-C on a TTY ---\n${JSON.stringify(out)}\n`);
    expect(code).toBe(130);
    const at = out.indexOf("grex: sync was cancelled");
    expect(at).toBeGreaterThanOrEqual(0);
    // Nothing of the progress bar is left on the message's line.
    const before = out.slice(0, at);
    expect(before === "" || before.endsWith("\n") || before.endsWith("\r\x1b[2K")).toBe(true);
    expect(out.slice(at)).toBe(
      "grex: sync was cancelled during setup: setup finished for 0 packs; cut short for slow (its next sync runs it again); none left unstarted. What finished is recorded, nothing is half-written. Run `grex sync` again to finish.\n",
    );
    writeFileSync(join(t.root, "done"), "");
  });
});
