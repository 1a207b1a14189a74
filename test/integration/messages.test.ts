// Messages that used to mislead: each now names the cause and the way out.
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { TestWorkspace } from "../helpers/workspace.ts";

// Real processes on a shared machine: give them room.
setDefaultTimeout(60_000);

let t: TestWorkspace;
beforeEach(async () => {
  t = new TestWorkspace("grex-msg-");
  await t.grex("init");
});
afterEach(() => t.cleanup());

async function withDevEnv() {
  for (const name of ["child-a", "child-b"]) t.repo(name);
  expect((await t.grex("add", t.repo("meta-basic"), "dev-env")).code).toBe(0);
}

test("ls/status with a filter whose terms never match together say so, not 'No packs registered'; a term matching no pack is exit 2", async () => {
  await withDevEnv();
  expect((await t.grex("ls", "--filter", "dev-env,depth=1")).stdout).toBe("No registered pack matches the filter; run `grex ls` without it to see them all.\n");
  const typo = await t.grex("ls", "--filter", "dev-evn");
  expect(typo.code).toBe(2);
  expect(typo.stderr).toBe("grex: No registered pack matches 'dev-evn' (--filter term 'dev-evn'). Did you mean 'dev-env'?\n");
  expect((await t.grex("status", "--filter", "dev-env,depth=1")).stdout).toBe(
    "No registered pack matches the filter; run `grex status` without it to see them all.\n",
  );
  expect((await t.grex("ls")).stdout).toContain("dev-env/child-a");
});

test("rm of a child explains that it belongs to its parent; a typo gets a suggestion", async () => {
  await withDevEnv();
  const child = await t.grex("rm", "dev-env/child-a");
  expect(child.code).toBe(2);
  expect(child.stderr).toBe(
    "grex: 'dev-env/child-a' is a child of 'dev-env' (listed under children: in its .grex/pack.yaml), so it cannot be removed on its own; drop it from that list and run `grex sync`, or remove 'dev-env'.\n",
  );
  const typo = await t.grex("rm", "dev-env/chld-a");
  expect(typo.stderr).toBe(`grex: No pack 'dev-env/chld-a' is registered in ${join(t.ws, "grex.jsonl")}. Did you mean 'dev-env/child-a'? See \`grex ls\`.\n`);
});

test("rm whose teardown fails names the failing action and its reason", async () => {
  const url = t.repo("stubborn", {
    ".grex/pack.yaml": 'schema_version: "1"\nname: stubborn\ntype: declarative\nteardown:\n  - exec: { cmd: [sh, -c, "echo cannot >&2; exit 3"] }\n',
  });
  expect((await t.grex("add", url, "stubborn")).code).toBe(0);
  const r = await t.grex("rm", "stubborn");
  expect(r.code).toBe(4);
  expect(r.stderr).toMatch(/^grex: Teardown of 'stubborn' failed \(action 0 \(exec\) failed: .*exit.* 3.*\), so it stays registered; fix that and run `grex rm stubborn` again, or pass --force to remove it anyway \(--skip-teardown leaves its setup in place\)\.\n$/);
  const forced = await t.grex("rm", "stubborn", "--force");
  expect(forced.code).toBe(0);
  expect(forced.stderr).toMatch(/^grex: warning: teardown of 'stubborn' failed \(action 0 \(exec\) failed: .*\); removed anyway \(--force\)\.\n$/);
});

test("doctor suggests --fix only when it would help, never after --fix", async () => {
  await withDevEnv();
  writeFileSync(join(t.ws, ".gitignore"), "stray\n");
  const before = await t.grex("doctor");
  expect(before.code).toBe(7);
  expect(before.stderr).toContain("`grex doctor --fix` heals them.");
  expect((await t.grex("doctor", "--fix")).code).toBe(0);
  // What --fix cannot heal: a broken pack.yaml.
  writeFileSync(join(t.ws, "dev-env", ".grex", "pack.yaml"), "schema_version: 1\n");
  const after = await t.grex("doctor", "--fix");
  expect(after.stderr).not.toContain("grex doctor --fix");
  expect(after.stderr).toContain("--fix cannot heal what is left; fix it by hand");
});

test("import of a bad path says how to correct the entry, not --force", async () => {
  writeFileSync(join(t.ws, "R.json"), JSON.stringify([{ url: "https://example.invalid/a.git", path: "../a" }]));
  const r = await t.grex("import", "--from-repos-json", "R.json");
  expect(r.code).toBe(2);
  expect(r.stderr).not.toContain("--force");
  expect(r.stderr).toContain("correct that entry in R.json and run grex import again.");
});

test("add with a path that is not workspace-relative says why and what would do, not 'pass a path argument'", async () => {
  const url = t.repo("child-a");
  const r = await t.grex("add", url, "../escape");
  expect(r.code).toBe(2);
  expect(r.stderr).toBe(
    "grex: Pack path '../escape' is not a workspace-relative path (it contains '..'); use directory names of letters, digits, '.', '_' and '-' joined by '/', such as 'tools/mine'.\n",
  );
});
