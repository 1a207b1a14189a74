// The install phase runs independent packs at the same time under --parallel,
// keeping every ordering rule. Proven by order, never by timing: each setup
// appends start/end lines to one log, and two independent packs meet at a
// rendezvous (each waits until it sees the other's file), which a serial run
// could never pass. (`$$` is a literal dollar for the shell: grex expands `$NAME`.)
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { TestWorkspace } from "../helpers/workspace.ts";

setDefaultTimeout(60_000);

let t: TestWorkspace;
beforeEach(async () => {
  t = new TestWorkspace("grex-pinstall-");
  await t.grex("init");
});
afterEach(() => t.cleanup());

const sh = (script: string) => `  - exec: { cmd: [sh, -c, ${JSON.stringify(script)}] }\n`;
const mark = (what: string) => `echo ${what} >> "$HOME/order.log"`;
/** Touch my file, then wait (up to 15 s) for the other's; log whether it came. */
const rendezvous = (me: string, other: string) =>
  `mkdir -p "$HOME/rv"; touch "$HOME/rv/${me}"; i=0; while [ ! -e "$HOME/rv/${other}" ] && [ $$i -lt 300 ]; do sleep 0.05; i=$$((i+1)); done; test -e "$HOME/rv/${other}" && ${mark(`${me}-saw-${other}`)}`;

function pack(name: string, type: string, body: string, extra = ""): string {
  return t.repo(name, { ".grex/pack.yaml": `schema_version: "1"\nname: ${name}\ntype: ${type}\n${extra}actions:\n${body}` });
}

const log = () => readFileSync(join(t.home, "order.log"), "utf8").trim().split("\n");

test("independent packs overlap; a child finishes before its parent starts; depends_on targets first", async () => {
  const a = pack("alpha", "declarative", sh(`${mark("start-alpha")}; ${rendezvous("alpha", "beta")}; ${mark("end-alpha")}`));
  const b = pack("beta", "declarative", sh(`${mark("start-beta")}; ${rendezvous("beta", "alpha")}; ${mark("end-beta")}`));
  const child = pack("kid", "declarative", sh(`${mark("start-kid")}; sleep 0.3; ${mark("end-kid")}`));
  const parent = pack("parent", "meta", sh(mark("start-parent")), `children:\n  - url: ${child}\n    path: kid\n`);
  const base = pack("base", "declarative", sh(`${mark("start-base")}; sleep 0.3; ${mark("end-base")}`));
  const user = pack("user", "declarative", sh(mark("start-user")), "depends_on: [base]\n");
  for (const [url, id] of [[a, "alpha"], [b, "beta"], [parent, "parent"], [base, "base"], [user, "user"]] as const) {
    expect((await t.grex("add", url, id, "--no-install")).code).toBe(0);
  }
  const r = await t.grex("sync", "--parallel", "4", "--json");
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const lines = log();
  // Overlap: each of the two saw the other's rendezvous file while it was still running.
  expect(lines).toContain("alpha-saw-beta");
  expect(lines).toContain("beta-saw-alpha");
  // Children and depends_on first: their end comes before the dependant's start.
  expect(lines.indexOf("end-kid")).toBeGreaterThanOrEqual(0);
  expect(lines.indexOf("end-kid")).toBeLessThan(lines.indexOf("start-parent"));
  expect(lines.indexOf("end-base")).toBeLessThan(lines.indexOf("start-user"));
  // --json is the whole document, steps in install order.
  const steps = (r.json.steps as Array<{ pack: string }>).map((s) => s.pack);
  expect(steps.indexOf("parent/kid")).toBeLessThan(steps.indexOf("parent"));
});

test("--parallel 1 runs setups one at a time (the rendezvous cannot meet)", async () => {
  const slow = pack("one", "declarative", sh(`${mark("start-one")}; sleep 0.2; ${mark("end-one")}`));
  const other = pack("two", "declarative", sh(`${mark("start-two")}; sleep 0.2; ${mark("end-two")}`));
  expect((await t.grex("add", slow, "one", "--no-install")).code).toBe(0);
  expect((await t.grex("add", other, "two", "--no-install")).code).toBe(0);
  expect((await t.grex("sync", "--parallel", "1")).code).toBe(0);
  const lines = log();
  const [first, second] = lines[0] === "start-one" ? ["one", "two"] : ["two", "one"];
  expect(lines).toEqual([`start-${first}`, `end-${first}`, `start-${second}`, `end-${second}`]);
});

test("human output: one row per pack as it completes, then the summary line", async () => {
  // `aslow` waits for `zfast` to finish: a table printed at the end would list aslow first.
  const slow = pack("aslow", "declarative", sh(`i=0; while ! grep -q end-zfast "$HOME/order.log" 2>/dev/null && [ $$i -lt 300 ]; do sleep 0.05; i=$$((i+1)); done; ${mark("end-aslow")}`));
  const fast = pack("zfast", "declarative", sh(mark("end-zfast")));
  expect((await t.grex("add", slow, "aslow", "--no-install")).code).toBe(0);
  expect((await t.grex("add", fast, "zfast", "--no-install")).code).toBe(0);
  const r = await t.grex("sync", "--plain");
  expect(r.code).toBe(0);
  const rows = r.stdout.split("\n").filter((l) => /^(ok|failed|skipped|dirty) /.test(l));
  expect(rows.map((l) => l.split(/\s+/)[1])).toEqual(["zfast", "aslow"]);
  expect(r.stdout.trimEnd().split("\n").at(-1)).toBe("2 packs: 2 ok, 0 skipped, 0 dirty, 0 failed");
});

test("Ctrl-C during setup says what finished, what was cut short and what never started", async () => {
  const quick = pack("quick", "declarative", sh(mark("end-quick")));
  const stuck = pack("stuck", "declarative", sh(`${mark("start-stuck")}; sleep 30`));
  const after = pack("after", "declarative", sh(mark("start-after")), "depends_on: [stuck]\n");
  for (const [url, id] of [[quick, "quick"], [stuck, "stuck"], [after, "after"]] as const) {
    expect((await t.grex("add", url, id, "--no-install")).code).toBe(0);
  }
  const proc = t.spawnGrex(["sync", "--parallel", "2", "--plain"]);
  const logFile = join(t.home, "order.log");
  for (let i = 0; i < 400 && !(existsSync(logFile) && readFileSync(logFile, "utf8").includes("start-stuck") && readFileSync(logFile, "utf8").includes("end-quick")); i++) {
    await Bun.sleep(50);
  }
  await Bun.sleep(200); // quick's row is reported once its install returns
  proc.kill("SIGINT");
  const code = await proc.exited;
  const stderr = await new Response(proc.stderr).text();
  expect(code).toBe(130);
  expect(stderr).toContain("sync was cancelled during setup: setup finished for 1 pack; cut short for stuck (its next sync runs it again); never started for after. What finished is recorded");
  expect(readFileSync(logFile, "utf8")).not.toContain("start-after");
});
