// grex.lock.jsonl (SPEC §2.2): last line wins per id, integrity errors with
// file:line, torn tails, locked appends and the atomic compact rewrite.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { GrexError } from "../../src/core/base/errors.ts";
import {
  appendLockEntries,
  type LockEntry,
  parseLockfile,
  plainLockEntry,
  readLockfile,
  safeParseLockEntry,
  writeLockfile,
} from "../../src/core/workspace/lockfile.ts";
import { type Workspace, workspaceAt } from "../../src/core/base/workspace.ts";
import { prng } from "../helpers/prng.ts";
import { TmpDirs } from "../helpers/tmp.ts";

const tmp = new TmpDirs();
let ws: Workspace;
beforeEach(() => {
  ws = workspaceAt(tmp.make("grex-lockfile-"));
});
afterEach(() => tmp.cleanup());

const SHA = "0123456789abcdef0123456789abcdef01234567";
const HASH = `sha256:${"ab".repeat(32)}`;
function entry(id: string, extra: Partial<LockEntry> = {}): LockEntry {
  return { id, sha: SHA, branch: "main", installed_at: "2026-01-01T00:00:00.000Z", actions_hash: HASH, type: "meta", ...extra };
}
const line = (o: unknown) => `${JSON.stringify(o)}\n`;
/** The line grex writes: shared fields only (the install facts are this machine's, in .grex/.state/installs.json). */
const shared = (e: LockEntry) => {
  const { installed_at: _a, installed_sha: _s, install_error: _e, installed_hash: _h, checkout: _c, ...rest } = e;
  return line(rest);
};
const collect = () => {
  const warnings: string[] = [];
  return { warnings, warn: (m: string) => void warnings.push(m) };
};

function grexErr(f: () => unknown): GrexError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(GrexError);
    return err as GrexError;
  }
  throw new Error("expected a GrexError");
}

describe("reading", () => {
  test("a missing lockfile is empty", () => {
    expect(readLockfile(ws).size).toBe(0);
  });

  test("last line wins per id; ids keep first-seen order; optional fields survive", () => {
    const text =
      line(entry("a", { sha: "" })) +
      line(entry("b", { branch: null, installed_at: "", actions_hash: "" })) +
      "\n" +
      line(entry("a", { sha: SHA, installed_sha: SHA })) +
      line(entry("b/child", { url: "../c.git", ref: null }));
    writeFileSync(ws.lockPath, text);
    const m = readLockfile(ws);
    expect([...m.keys()]).toEqual(["a", "b", "b/child"]);
    expect(m.get("a")).toEqual(entry("a", { installed_sha: SHA }));
    expect(m.get("b")?.branch).toBeNull();
    expect(m.get("b/child")).toEqual(entry("b/child", { url: "../c.git", ref: null }));
  });

  const bad: Array<[string, string, string]> = [
    ["bad JSON", `${line(entry("a"))}{nope\n${line(entry("b"))}`, "grex.lock.jsonl line 2 is not valid JSON"],
    ["missing sha", line({ ...entry("a"), sha: undefined }), "line 1 has no 'sha'"],
    ["a short sha", line(entry("a", { sha: "abc" })), "line 1 has a bad 'sha'"],
    ["bad actions_hash", line(entry("a", { actions_hash: "md5:x" })), "'actions_hash'"],
    ["bad id", line(entry("../x")), "'id'"],
    ["not an object", "[]\n", "line 1 is not a lock entry object"],
  ];
  for (const [name, text, says] of bad) {
    test(`integrity error: ${name}`, () => {
      writeFileSync(ws.lockPath, text);
      const err = grexErr(() => readLockfile(ws));
      expect(err.kind).toBe("integrity");
      expect(err.message).toContain(says);
      expect(err.message).not.toContain("\n");
      expect(err.message.endsWith(".")).toBe(true);
    });
  }

  test("a torn tail is ignored with a warning and removed by the next locked append", async () => {
    const good = line(entry("a"));
    writeFileSync(ws.lockPath, `${good}{"id":"b","sha`);
    const { warnings, warn } = collect();
    expect([...readLockfile(ws, { warn }).keys()]).toEqual(["a"]);
    expect(warnings).toHaveLength(1);
    expect(parseLockfile(`${good}{"id"`, ws.lockPath).tornTail).toBe(true);

    await appendLockEntries(ws, [entry("c")]);
    expect(readFileSync(ws.lockPath, "utf8")).toBe(good + shared(entry("c")));
    const again = collect();
    expect([...readLockfile(ws, again).keys()]).toEqual(["a", "c"]);
    expect(again.warnings).toEqual([]);
  });
});

describe("writing", () => {
  test("appendLockEntries creates the file and appends durable lines; last wins on read", async () => {
    await appendLockEntries(ws, [entry("a", { sha: "" }), entry("b")]);
    await appendLockEntries(ws, [entry("a")]);
    expect(readFileSync(ws.lockPath, "utf8").split("\n")).toHaveLength(4);
    expect(readLockfile(ws).get("a")?.sha).toBe(SHA);
  });

  test("appending after a complete last line without its newline keeps both", async () => {
    writeFileSync(ws.lockPath, JSON.stringify(entry("a")));
    await appendLockEntries(ws, [entry("b")]);
    expect([...readLockfile(ws).keys()]).toEqual(["a", "b"]);
  });

  test("writeLockfile is a compact atomic rewrite in canonical key order", async () => {
    writeFileSync(ws.lockPath, line(entry("a", { sha: "" })) + line(entry("b")) + line(entry("a")));
    const ino = statSync(ws.lockPath).ino;
    // Keys in a scrambled order come out in schema order.
    const scrambled = { type: "meta", id: "z", actions_hash: "", installed_at: "", branch: null, sha: "" } as LockEntry;
    await writeLockfile(ws, [...readLockfile(ws).values(), scrambled]);
    expect(statSync(ws.lockPath).ino).not.toBe(ino); // temp + rename, never in place
    expect(readFileSync(ws.lockPath, "utf8")).toBe(
      shared(entry("a")) + shared(entry("b")) + '{"id":"z","sha":"","branch":null,"actions_hash":"","type":"meta"}\n',
    );
    expect(readdirSync(ws.root).filter((n) => n.endsWith(".tmp"))).toEqual([]);
    // Rewriting the same state is byte-identical.
    const once = readFileSync(ws.lockPath, "utf8");
    await writeLockfile(ws, readLockfile(ws).values());
    expect(readFileSync(ws.lockPath, "utf8")).toBe(once);
  });

  test("install facts live in .grex/.state/installs.json; a line changes only when what it shares changes", async () => {
    await writeLockfile(ws, [entry("a", { installed_sha: SHA }), entry("b")]);
    const text = readFileSync(ws.lockPath, "utf8");
    expect(text).toBe(shared(entry("a")) + shared(entry("b")));
    expect(readLockfile(ws).get("a")).toMatchObject({ installed_at: "2026-01-01T00:00:00.000Z", installed_sha: SHA });
    const mtime = statSync(ws.lockPath).mtimeMs;
    // Another install time, a failed install, a checkout grex made: this machine's, the committed file is untouched.
    await Bun.sleep(5);
    await writeLockfile(ws, [entry("a", { installed_at: "2026-02-02T00:00:00.000Z", checkout: { sha: SHA, branch: null } }), entry("b", { installed_at: "", install_error: "boom" })]);
    expect(readFileSync(ws.lockPath, "utf8")).toBe(text);
    expect(statSync(ws.lockPath).mtimeMs).toBe(mtime);
    expect(readLockfile(ws).get("a")).toMatchObject({ installed_at: "2026-02-02T00:00:00.000Z", checkout: { sha: SHA, branch: null } });
    expect(readLockfile(ws).get("b")).toMatchObject({ installed_at: "", install_error: "boom" });
    // --locked: only this machine's records, even when the entries say another commit.
    await writeLockfile(ws, [entry("a", { sha: "f".repeat(40) })], undefined, { shared: false });
    expect(readFileSync(ws.lockPath, "utf8")).toBe(text);
    // The shared part changes: rewritten.
    await writeLockfile(ws, [entry("a", { sha: "f".repeat(40) }), entry("b")]);
    expect(readFileSync(ws.lockPath, "utf8")).toBe(shared(entry("a", { sha: "f".repeat(40) })) + shared(entry("b")));
  });

  test("identical duplicate lines and an older grex's install times are left until the pack changes; conflicting lines are rewritten", async () => {
    const older = line(entry("a")) + line(entry("b")) + line(entry("a")); // installed_at in the line, and a union merge's duplicate
    writeFileSync(ws.lockPath, older);
    // An older grex's line keeps telling this machine's install time until installs.json has one.
    expect(readLockfile(ws).get("a")?.installed_at).toBe("2026-01-01T00:00:00.000Z");
    await writeLockfile(ws, readLockfile(ws).values());
    expect(readFileSync(ws.lockPath, "utf8")).toBe(older);
    await writeLockfile(ws, [entry("a", { sha: "f".repeat(40) }), entry("b")]);
    expect(readFileSync(ws.lockPath, "utf8")).toBe(shared(entry("a", { sha: "f".repeat(40) })) + shared(entry("b")));
    // Two commits for one pack (a merge of two re-pins): the write settles it.
    writeFileSync(ws.lockPath, shared(entry("a")) + shared(entry("a", { sha: "f".repeat(40) })));
    await writeLockfile(ws, [entry("a", { sha: "f".repeat(40) })]);
    expect(readFileSync(ws.lockPath, "utf8")).toBe(shared(entry("a", { sha: "f".repeat(40) })));
  });

  test("an invalid entry is refused and the file is left as it was", async () => {
    writeFileSync(ws.lockPath, line(entry("a")));
    const before = readFileSync(ws.lockPath, "utf8");
    for (const bad of [entry("b", { sha: "xyz" }), entry("a b")]) {
      await expect(writeLockfile(ws, [entry("a"), bad])).rejects.toBeInstanceOf(GrexError);
      await expect(appendLockEntries(ws, [bad])).rejects.toBeInstanceOf(GrexError);
    }
    expect(readFileSync(ws.lockPath, "utf8")).toBe(before);
  });

  test("writeLockfile snapshots its entries before waiting for the lock", async () => {
    const m = new Map([["a", entry("a")]]);
    const p = writeLockfile(ws, m.values());
    m.set("b", entry("b"));
    await p;
    expect([...readLockfile(ws).keys()]).toEqual(["a"]);
    expect(existsSync(ws.lockPath)).toBe(true);
  });
});

describe("plain lock entries (the fast path of reading)", () => {
  // Values that are valid and invalid for each field, mixed at random: the hand
  // check may accept only what the schema accepts, and must give the same entry.
  const FIELD_VALUES: Record<string, unknown[]> = {
    id: ["tools", "a/b", "", "../x", "a b", 7, null, "x/../y", "-bad"],
    sha: [SHA, "", "abc", SHA.toUpperCase(), "f".repeat(64), null, 1],
    branch: ["main", null, "", 3, ["main"]],
    installed_at: ["2026-01-01T00:00:00.000Z", "", "yesterday", "2026-01-01T00:00:00Z", 0],
    actions_hash: [HASH, "", "sha256:xyz", "ab".repeat(32), null],
    type: ["meta", "declarative", "", 5],
    installed_sha: [undefined, SHA, "", "nope", null],
    url: [undefined, "https://example.com/x.git", "", 9, null],
    ref: [undefined, null, "v1", "", 4],
    install_error: [undefined, "boom", "", false],
    extra_key: [undefined, "kept?", { nested: true }],
  };
  const rand = prng(0x10cf11e);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)] as T;

  test("agrees with the schema on 5,000 generated entries", () => {
    let accepted = 0;
    for (let i = 0; i < 5000; i++) {
      const o: Record<string, unknown> = {};
      for (const [k, values] of Object.entries(FIELD_VALUES)) {
        // Mostly valid values (the first few), so both outcomes are common; sometimes a key is left out.
        const value = rand() < 0.75 ? values[0] : pick(values);
        if (value !== undefined && rand() > 0.03) o[k] = value;
      }
      const plain = plainLockEntry(structuredClone(o));
      const reference = safeParseLockEntry(structuredClone(o));
      if (plain) {
        accepted++;
        expect(reference.success).toBe(true);
        // Same fields in the same order: a re-serialised entry is byte-identical.
        expect(JSON.stringify(plain)).toBe(JSON.stringify(reference.success ? reference.output : null));
      }
    }
    expect(accepted).toBeGreaterThan(500);
  });

  test("an entry the hand check leaves to the schema still reads, extra keys dropped", () => {
    const { entries } = parseLockfile(line({ ...entry("a"), note: "from a newer grex" }), "grex.lock.jsonl");
    expect(entries.get("a")).toEqual(entry("a"));
  });
});
