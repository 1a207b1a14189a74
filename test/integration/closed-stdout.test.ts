// A reader that goes away (`grex ls --json | head -c 200`) ends grex quietly,
// as git does: no EPIPE error object, no stack, the workspace untouched.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { GREX_MAIN, TestWorkspace } from "../helpers/workspace.ts";

// Real processes on a shared machine: give them room.
setDefaultTimeout(60_000);

let t: TestWorkspace;
beforeAll(async () => {
  t = new TestWorkspace("grex-epipe-");
  await t.grex("init");
  const entries = Array.from({ length: 1000 }, (_, i) => ({ url: `https://example.invalid/p${i}.git`, path: `p${i}` }));
  writeFileSync(join(t.ws, "REPOS.json"), JSON.stringify(entries));
  expect((await t.grex("import", "--from-repos-json", "REPOS.json")).code).toBe(0);
});
afterAll(() => t.cleanup());

for (const argv of [["ls", "--json"], ["ls"], ["help"]]) {
  test(`grex ${argv.join(" ")} | head -c 200: quiet, exit status 0`, () => {
    const manifest = readFileSync(join(t.ws, "grex.jsonl"), "utf8");
    const errFile = join(t.root, "stderr.txt");
    const r = Bun.spawnSync(
      ["bash", "-c", `"$0" "$1" ${argv.join(" ")} 2>"$2" | head -c 200 >/dev/null; echo "\${PIPESTATUS[0]}"`, process.execPath, GREX_MAIN, errFile],
      { cwd: t.ws, env: t.env, stdout: "pipe", stderr: "pipe" },
    );
    expect(readFileSync(errFile, "utf8")).toBe("");
    expect(r.stdout.toString()).toBe("0\n");
    expect(readFileSync(join(t.ws, "grex.jsonl"), "utf8")).toBe(manifest);
  });
}
