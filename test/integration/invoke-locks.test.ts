// The one invoke path under concurrency, with real grex processes and a real
// MCP client: what each verb declares (locks, writes) holds for every caller,
// and every write to a shared file goes through its module under its lock.
import { afterEach, describe, expect, test } from "bun:test";
import { closeSync, constants, existsSync, lstatSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { git, TestWorkspace } from "../helpers/workspace.ts";

const workspaces: TestWorkspace[] = [];
afterEach(() => {
  for (const w of workspaces.splice(0)) w.cleanup();
});

async function freshWorkspace(): Promise<TestWorkspace> {
  const w = new TestWorkspace("grex-invoke-");
  workspaces.push(w);
  expect((await w.grex("init")).code).toBe(0);
  return w;
}

async function finish(p: ReturnType<TestWorkspace["spawnGrex"]>) {
  const [code, stdout, stderr] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code, stdout, stderr };
}

const manifestEvents = (w: TestWorkspace) =>
  readFileSync(join(w.ws, "grex.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as { op: string; id: string; url?: string });

describe("import decides under the manifest lock", () => {
  test("8 concurrent imports (own entry each + one contested path) and a sync: nothing lost, the contested path registered once", async () => {
    const w = await freshWorkspace();
    const N = 8;
    // Same history under eight URLs; the contested path is already cloned, so
    // each import reads its pack.yaml between deciding and appending.
    const base = w.repo("base", { ".grex/pack.yaml": 'schema_version: "1"\nname: base\ntype: meta\n' });
    git(w.ws, "clone", "-q", base, "shared");
    const urls: string[] = [];
    for (let i = 0; i < N; i++) {
      const url = join(w.upstream, `up${i}`);
      git(w.upstream, "clone", "-q", "--bare", base, url);
      urls.push(url);
      // Each file lists its own pack and the same contested path with its own URL.
      writeFileSync(join(w.ws, `repos${i}.json`), JSON.stringify([{ url, path: `p${i}` }, { url, path: "shared" }]));
    }
    const procs = [...Array(N).keys()].map((i) => w.spawnGrex(["import", "--from-repos-json", `repos${i}.json`, "--json"]));
    const sync = w.spawnGrex(["sync", "--json"]);
    const results = await Promise.all(procs.map(finish));
    const syncRun = await finish(sync);
    expect([0, 5]).toContain(syncRun.code);

    // Every process's own entry is registered exactly once.
    const adds = manifestEvents(w).filter((e) => e.op === "add");
    for (let i = 0; i < N; i++) expect(adds.filter((e) => e.id === `p${i}`).length).toBe(1);
    // The contested path: exactly one add, by exactly one process; the others were told.
    const sharedAdds = adds.filter((e) => e.id === "shared");
    expect(sharedAdds.length).toBe(1);
    const docs = results.map((r) => JSON.parse(r.stdout) as { imported: { path: string; url: string }[]; failed: { path: string }[] });
    const winners = docs.filter((d) => d.imported.some((x) => x.path === "shared"));
    expect(winners.length).toBe(1);
    expect(winners[0]?.imported.find((x) => x.path === "shared")?.url).toBe(sharedAdds[0]?.url as string);
    expect(results.filter((r) => r.code === 0).length).toBe(1);
    for (const [i, r] of results.entries()) {
      if (r.code !== 0) {
        expect(r.code).toBe(2);
        expect(docs[i]?.failed.map((f) => f.path)).toEqual(["shared"]);
      }
    }
    // Every block is in .gitignore.
    const ignore = readFileSync(join(w.ws, ".gitignore"), "utf8");
    for (let i = 0; i < N; i++) expect(ignore).toContain(`# >>> grex:p${i} >>>`);
    expect(ignore).toContain("# >>> grex:shared >>>");

    // A plain sync afterwards converges: every registered pack is on disk.
    const again = await w.grex("sync", "--json");
    expect(again.code).toBe(0);
    for (let i = 0; i < N; i++) expect(existsSync(join(w.ws, `p${i}`, ".git"))).toBe(true);
    expect(existsSync(join(w.ws, "shared", ".git"))).toBe(true);
  }, 120_000);
});

describe(".gitignore is written only through its module", () => {
  // A closer without its opener: other writers leave it alone, doctor --fix removes it.
  const brokenBlock = "# <<< grex:ghost <<<\n";

  test("a symlinked .gitignore stays a symlink through doctor --fix and import --migrate-gitignore", async () => {
    const w = await freshWorkspace();
    const real = join(w.root, "shared-ignore");
    writeFileSync(real, `${readFileSync(join(w.ws, ".gitignore"), "utf8")}${brokenBlock}`);
    const link = join(w.ws, ".gitignore");
    Bun.spawnSync(["rm", link]);
    symlinkSync(real, link);

    const fix = await w.grex("doctor", "--fix", "--json");
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(fix.json.fixed).toContain("gitignore-sync");
    expect(readFileSync(real, "utf8")).not.toContain("grex:ghost");

    const url = w.repo("one", { "README.md": "x\n" });
    writeFileSync(real, `${readFileSync(real, "utf8")}/one/\n`);
    writeFileSync(join(w.ws, "repos.json"), JSON.stringify([{ url, path: "one" }]));
    expect((await w.grex("import", "--from-repos-json", "repos.json", "--migrate-gitignore")).code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    const text = readFileSync(real, "utf8");
    expect(text).toContain("# >>> grex:one >>>");
    expect(text.split("\n").filter((l) => l === "/one/").length).toBe(1); // only the block's line
  });

  test("concurrent doctor --fix and add leave a valid .gitignore holding both blocks", async () => {
    const w = await freshWorkspace();
    // Registered packs on disk give doctor's check some work, so the add can land while doctor runs.
    const many = [...Array(8).keys()].map((k) => ({ url: w.repo(`bulk${k}`, { "c.txt": "c\n" }), path: `bulk${k}` }));
    writeFileSync(join(w.ws, "bulk.json"), JSON.stringify(many));
    expect((await w.grex("import", "--from-repos-json", "bulk.json")).code).toBe(0);
    expect((await w.grex("sync")).code).toBe(0);
    const ROUNDS = 4;
    for (let i = 0; i < ROUNDS; i++) {
      // A block only doctor writes (a registered pack whose block is missing), a broken one it repairs.
      writeFileSync(join(w.ws, `reg${i}.json`), JSON.stringify([{ url: w.repo(`reg${i}`, { "a.txt": "a\n" }), path: `reg${i}` }]));
      expect((await w.grex("import", "--from-repos-json", `reg${i}.json`)).code).toBe(0);
      const ignorePath = join(w.ws, ".gitignore");
      const withoutReg = readFileSync(ignorePath, "utf8").replace(`# >>> grex:reg${i} >>>\n/reg${i}/\n# <<< grex:reg${i} <<<\n`, "");
      writeFileSync(ignorePath, `${withoutReg}${brokenBlock}`);

      const url = w.repo(`add${i}`, { "b.txt": "b\n" });
      const add = w.spawnGrex(["add", url, `add${i}`]);
      const doctor = w.spawnGrex(["doctor", "--fix"]);
      const [a, d] = await Promise.all([finish(add), finish(doctor)]);
      expect({ code: a.code, stderr: a.stderr }).toEqual({ code: 0, stderr: "" });
      expect({ code: [0, 7].includes(d.code), stderr: d.stderr.replace(/^grex: grex doctor found.*\n/m, "") }).toEqual({ code: true, stderr: "" });

      const text = readFileSync(ignorePath, "utf8");
      expect(text).toContain(`# >>> grex:add${i} >>>\n/add${i}/\n# <<< grex:add${i} <<<`);
      expect(text).not.toContain("grex:ghost");
      // A second doctor --fix finds every block in place (valid, nothing to repair).
      const check = await w.grex("doctor", "--json");
      const findings = check.json.findings as { check: string; severity: string }[];
      expect(findings.find((f) => f.check === "gitignore-sync")?.severity).toBe("ok");
    }
  }, 120_000);

  test("an add that lands while doctor --fix is between its check and its fix keeps its block", async () => {
    // Deterministic: a registered pack's .git/config is a FIFO, so doctor (having read the manifest)
    // waits inside its check, reading it, until the test feeds it; the whole add runs in that pause.
    const w = await freshWorkspace();
    writeFileSync(join(w.ws, "gate.json"), JSON.stringify([{ url: w.repo("gate", { "a.txt": "a\n" }), path: "gate" }]));
    expect((await w.grex("import", "--from-repos-json", "gate.json")).code).toBe(0);
    expect((await w.grex("sync")).code).toBe(0);
    const fifo = join(w.ws, "gate", ".git", "config");
    const gateConfig = readFileSync(fifo, "utf8");
    rmSync(fifo);
    expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
    const ignorePath = join(w.ws, ".gitignore");
    writeFileSync(ignorePath, `${readFileSync(ignorePath, "utf8")}${brokenBlock}`); // something for --fix to do

    const doctor = w.spawnGrex(["doctor", "--fix"]);
    let doctorDone = false;
    const doctorRun = finish(doctor).finally(() => {
      doctorDone = true;
    });
    /** Open the FIFO for writing once doctor opens it to read (ENXIO until then); null if doctor ended. */
    const whenReading = async (): Promise<number | null> => {
      for (;;) {
        if (doctorDone) return null;
        try {
          return openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
        } catch {
          await Bun.sleep(5); // polling for the reader, not measuring anything
        }
      }
    };
    const first = await whenReading();
    expect(first).not.toBeNull();
    // doctor has read grex.jsonl and waits on the FIFO: now a whole add.
    const url = w.repo("late", { "b.txt": "b\n" });
    const add = await finish(w.spawnGrex(["add", url, "late"]));
    expect({ code: add.code, stderr: add.stderr }).toEqual({ code: 0, stderr: "" });
    expect(readFileSync(ignorePath, "utf8")).toContain("# >>> grex:late >>>");
    // Feed doctor the config as often as it reads it (the check runs again after the fix).
    let fd = first;
    while (fd !== null) {
      try {
        writeSync(fd, gateConfig);
      } catch {
        // EPIPE: that reader already gave up on the FIFO; serve the next one
      }
      closeSync(fd);
      fd = await whenReading();
    }
    const d = await doctorRun;
    expect([0, 7]).toContain(d.code);
    const text = readFileSync(ignorePath, "utf8");
    expect(text).toContain("# >>> grex:late >>>\n/late/\n# <<< grex:late <<<");
    expect(text).toContain("# >>> grex:gate >>>");
    expect(text).not.toContain("grex:ghost");
  }, 60_000);
});
