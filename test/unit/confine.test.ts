// The confinement rule against an independent oracle: thousands of generated
// targets (`..` chains, absolute paths, $HOME/.., symlinked ancestors leading
// out of HOME or into the workspace, paths into .git, into other packs, the
// workspace root itself) in a real sandbox, each decided by the rule and by a
// plain real-path check written separately (the OS's realpath on the parent,
// then string-prefix tests), which must agree.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { Confinement, physicalPath } from "../../src/core/fs/confine.ts";

let root: string;
let home: string;
let ws: string;
let packs: string[];

beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "grex-confine-prop-")));
  home = join(root, "home");
  ws = join(home, "ws");
  packs = [join(ws, "a"), join(ws, "b"), join(ws, "a", "child")];
  for (const d of [join(root, "outside", "deep"), join(home, "docs", "sub"), join(ws, ".git", "hooks"), join(ws, ".grex", ".state")]) {
    mkdirSync(d, { recursive: true });
  }
  for (const p of packs) mkdirSync(join(p, ".git"), { recursive: true });
  mkdirSync(join(ws, "a", ".grex"), { recursive: true });
  mkdirSync(join(ws, "a", "files"), { recursive: true });
  writeFileSync(join(ws, "grex.jsonl"), "");
  writeFileSync(join(ws, "grex.lock.jsonl"), "");
  writeFileSync(join(home, ".bashrc"), "");
  symlinkSync(join(root, "outside"), join(home, "link-out"));
  symlinkSync("docs", join(home, "link-in"));
  symlinkSync(ws, join(home, "link-ws"));
  symlinkSync("../../b", join(ws, "a", "files", "to-b"));
  symlinkSync("../..", join(ws, "a", "files", "to-ws"));
  symlinkSync(join(root, "outside"), join(ws, "a", "files", "to-out"));
  symlinkSync("..", join(home, "docs", "up"));
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

// ------------------------------------------------------------ the oracle

const isInside = (outer: string, p: string) => p === outer || p.startsWith(outer === "/" ? "/" : `${outer}/`);

/** Where `p` really is: the OS's realpath of its parent, then its own name (the entry itself is what is acted on). */
function oracleReal(p: string): string {
  if (dirname(p) === p) return p;
  const parent = dirname(p);
  return join(existsSync(parent) ? realpathSync(parent) : oracleReal(parent), basename(p));
}

function oracleAllows(target: string, own: string, allowOutside: boolean): boolean {
  const real = oracleReal(target);
  if (real.split("/").includes(".git")) return false;
  if (real === "/") return false;
  const grexFiles = [join(ws, "grex.jsonl"), join(ws, "grex.lock.jsonl"), join(ws, ".grex"), ...packs.map((p) => join(p, ".grex"))];
  if (grexFiles.some((g) => isInside(g, real))) return false;
  if (packs.includes(real)) return false;
  const holders = packs.filter((p) => isInside(p, real)).sort((x, y) => y.length - x.length);
  if (holders.length > 0 && holders[0] !== own) return false;
  if (real === ws) return false;
  // The workspace's own area belongs to no pack (unless the workspace holds HOME).
  if (isInside(ws, real) && holders.length === 0 && !isInside(ws, home)) return false;
  // Written inside the pack, led out of the pack and HOME by a link: the pack chose where it goes.
  if (isInside(own, resolve(target)) && !isInside(own, real) && !isInside(home, real)) return false;
  if ([home, ws, ...packs, ...grexFiles].some((p) => isInside(real, p))) return false;
  if (!isInside(home, real) && !allowOutside) return false;
  return true;
}

// ------------------------------------------------------------ generated targets

/** A small deterministic PRNG (mulberry32), so a failure names a reproducible case. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const SEGMENTS = ["..", "..", ".", "x", "docs", "sub", "up", "link-out", "link-in", "link-ws", ".git", "hooks", "a", "b", "child", "ws", "home", "outside", "deep", ".grex", "grex.jsonl", "files", "to-b", "to-ws", "to-out", ".bashrc"];

function generate(next: () => number): string {
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
  const base = pick(["", "", "$HOME", "$HOME/..", "/", "ROOT", "WS"]);
  const segs = Array.from({ length: Math.floor(next() * 6) }, () => pick(SEGMENTS));
  const start = base === "$HOME" ? home : base === "$HOME/.." ? dirname(home) : base === "ROOT" ? root : base === "WS" ? ws : base;
  return [start, ...segs].filter((s) => s !== "").join("/") || ".";
}

describe("the rule equals an independent real-path check", () => {
  test("4000 generated targets, for a top-level pack and a child pack, with and without the opt-in", () => {
    const next = rng(0x9e3779b9);
    let refusedCount = 0;
    for (let i = 0; i < 4000; i++) {
      const raw = generate(next);
      const own = i % 2 === 0 ? join(ws, "a") : join(ws, "a", "child");
      const allow = i % 3 === 0;
      const target = resolve(own, raw); // what the action modules hand to the rule
      const rule = new Confinement({ home, workspaceRoot: ws, packDirs: packs, allowOutsideHome: allow });
      const decided = rule.refusal(target, own) === null;
      if (decided !== oracleAllows(target, own, allow)) {
        throw new Error(`disagree on '${raw}' (target ${target}, real ${oracleReal(target)}) for pack ${own}, allow=${allow}: rule says ${decided}`);
      }
      if (!decided) refusedCount++;
    }
    // The generator must exercise both answers, or the comparison proves little.
    expect(refusedCount).toBeGreaterThan(400);
    expect(refusedCount).toBeLessThan(3600);
  });

  test("physicalPath agrees with the OS's realpath on every existing generated path", () => {
    const next = rng(42);
    for (let i = 0; i < 1500; i++) {
      const p = resolve(join(ws, "a"), generate(next));
      if (existsSync(p)) expect(physicalPath(p, true)).toBe(realpathSync(p));
    }
  });
});

describe("named cases", () => {
  const rule = () => new Confinement({ home, workspaceRoot: ws, packDirs: packs, allowOutsideHome: false });
  const why = (p: string, own = join(ws, "a")) => rule().refusal(resolve(own, p), own)?.rule ?? null;

  test("each protected place has its own rule name", () => {
    expect(why(home)).toBe("home");
    expect(why(`${home}/..`)).toBe("holds-protected");
    expect(why("/")).toBe("filesystem-root");
    expect(why("..")).toBe("workspace-root");
    expect(why(".")).toBe("pack-dir");
    expect(why("../b")).toBe("pack-dir");
    expect(why("../b/x")).toBe("other-pack");
    expect(why("child/x")).toBe("other-pack");
    expect(why("x", join(ws, "a", "child"))).toBeNull(); // inside its own (nested) directory
    expect(why("../x", join(ws, "a", "child"))).toBe("other-pack"); // its parent pack is another pack
    expect(why("../.git/hooks/pre-commit")).toBe("git-dir");
    expect(why(".GIT/config")).toBe("git-dir");
    expect(why("../grex.jsonl")).toBe("grex-files");
    expect(why(".grex/pack.yaml")).toBe("grex-files");
    expect(why(`${home}/link-out/x`)).toBe("outside-home");
    expect(why(`${home}/link-ws`)).toBeNull(); // the link itself, not where it leads
    expect(why(`${home}/link-ws/a`)).toBe("pack-dir");
    expect(why("files/to-b/x")).toBe("other-pack");
    expect(why(`${home}/link-in/up/ws`)).toBe("workspace-root"); // link-in is docs, docs/up is HOME
    expect(why(`${home}/docs/up/..`)).toBeNull(); // `..` is collapsed before the kernel sees it: this is $HOME/docs
    expect(why(`${home}/.config/new/deeper`)).toBeNull();
    expect(why("files/to-ws/x")).toBe("workspace"); // the pack's own link into the workspace's own area
    expect(why("../x")).toBe("workspace");
    expect(why("files/to-out/x")).toBe("pack-link"); // the pack's own link out of the pack and HOME
    expect(new Confinement({ home, workspaceRoot: ws, packDirs: packs, allowOutsideHome: true }).refusal(join(ws, "a", "files/to-out/x"), join(ws, "a"))?.rule).toBe("pack-link");
    expect(new Confinement({ home, workspaceRoot: ws, packDirs: packs, allowOutsideHome: true }).refusal(join(root, "outside", "x"), join(ws, "a"))).toBeNull(); // written outside: the opt-in decides
  });

  test("an exec cwd may be HOME itself and the pack's own directory, nothing else protected", () => {
    const r = rule();
    expect(r.refusal(home, join(ws, "a"), { cwd: true })).toBeNull();
    expect(r.refusal(join(ws, "a"), join(ws, "a"), { cwd: true })).toBeNull();
    expect(r.refusal(ws, join(ws, "a"), { cwd: true })?.rule).toBe("workspace-root");
    expect(r.refusal(join(root, "outside"), join(ws, "a"), { cwd: true })?.rule).toBe("outside-home");
  });

  test("a directory about to be deleted or moved must not hold a .git anywhere inside", () => {
    mkdirSync(join(home, "proj", "nested", "repo", ".git"), { recursive: true });
    expect(rule().treeRefusal(join(home, "proj"), join(ws, "a"))?.rule).toBe("holds-git");
    expect(rule().treeRefusal(join(home, "docs"), join(ws, "a"))).toBeNull();
  });
});
