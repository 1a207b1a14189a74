// A full disk (ENOSPC) in the middle of a checkout (issue 34): the pack fails
// with one sentence, nothing half-written is left in place (a short write is
// never renamed over a file, no temp file stays), and once space is freed the
// next plain `grex sync` finishes the journaled move: the pack is clean at the
// new commit, as git sees it. Needs a small tmpfs, so root only.
import { afterAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { git, TestWorkspace } from "../helpers/workspace.ts";

const root = process.getuid?.() === 0;
const t = new TestWorkspace("grex-disk-full-");
let mounted = false;
if (root) mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", t.ws]).exitCode === 0;
afterAll(() => {
  if (mounted) Bun.spawnSync(["umount", t.ws]);
  t.cleanup();
});

/** Every file under `dir` (outside .git) whose name marks it as a checkout's temp file. */
function temps(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((p) => !p.startsWith(".git/") && p.includes(".grex-checkout-tmp"));
}

// Skipped without root (mounting a tmpfs needs it) or where the mount is refused (a container without CAP_SYS_ADMIN).
test.skipIf(!root || !mounted)("a checkout cut short by a full disk heals on the next plain sync once space is freed", async () => {
  const v1: Record<string, string> = {};
  for (let i = 0; i < 20; i++) v1[`f${i}.txt`] = `v1 ${i}\n`;
  const up = t.repo("pack", v1);
  expect((await t.grex("init")).code).toBe(0);
  expect((await t.grex("add", up)).code).toBe(0);
  const pack = join(t.ws, "pack");

  // Upstream: every file changes and a 1 MiB file arrives (it compresses to almost nothing, so the fetch fits).
  const v2: Record<string, string> = {};
  for (let i = 0; i < 20; i++) v2[`f${i}.txt`] = `v2 ${i}\n`;
  v2["big.txt"] = "abcdefgh\n".repeat(120_000);
  const target = t.commit(up, v2, "big");
  // Leave about 600 KiB free: the fetch fits, the checkout does not.
  const fs0 = statfsSync(t.ws);
  const filler = join(t.ws, ".filler");
  writeFileSync(filler, Buffer.alloc(fs0.bavail * fs0.bsize - 600 * 1024));

  const full = await t.grex("sync");
  expect(full.code).toBe(4);
  expect(full.stderr.trim().split("\n")).toHaveLength(1);
  expect(full.stderr).toContain("the disk filled up while checking out commit");
  expect(full.stderr).toContain("free some space, then run grex sync again to finish the update");
  expect(temps(pack)).toEqual([]);
  // Named until it heals: doctor says the update was cut short and what finishes it.
  const dr = await t.grex("doctor", "--json");
  const cut = (dr.json.findings as Array<{ check: string; pack: string | null; detail: string }>).filter((f) => f.detail.includes("cut short"));
  expect(cut.map((f) => [f.check, f.pack])).toEqual([["on-disk-drift", "pack"]]);
  expect(cut[0]?.detail).toContain(`to ${target.slice(0, 12)} was cut short (killed, or the disk was full); the next grex sync finishes it`);

  rmSync(filler);
  const healed = await t.grex("sync", "--json");
  expect(healed.stderr).toBe("");
  expect(healed.code).toBe(0);
  const row = (healed.json.packs as Array<{ id: string; result: string }>).find((p) => p.id === "pack");
  expect(row?.result).toBe("ok");
  expect(git(pack, "rev-parse", "HEAD")).toBe(target);
  expect(git(pack, "status", "--porcelain")).toBe("");
  expect(readFileSync(join(pack, "big.txt"), "utf8")).toBe(v2["big.txt"] as string);
  expect(temps(pack)).toEqual([]);
  const st = await t.grex("status", "--json");
  expect((st.json.packs as Array<{ id: string; drift: string }>).find((p) => p.id === "pack")?.drift).toBe("clean");
  const after = await t.grex("doctor", "--json");
  expect((after.json.findings as Array<{ detail: string }>).filter((f) => f.detail.includes("cut short"))).toEqual([]);
});

test.skipIf(!root || !mounted)("a fetch cut short by a full disk moves no ref, leaves no temp object, and the next sync after freeing space completes it", async () => {
  const up = t.repo("fetched", { "a.txt": "a\n" });
  expect((await t.grex("add", up)).code).toBe(0);
  const pack = join(t.ws, "fetched");
  const before = git(pack, "rev-parse", "HEAD");
  const target = t.commit(up, { "noise.txt": randomBytes(900_000).toString("base64") }, "incompressible");
  const fs0 = statfsSync(t.ws);
  const filler = join(t.ws, ".filler");
  writeFileSync(filler, Buffer.alloc(fs0.bavail * fs0.bsize - 600 * 1024));
  const full = await t.grex("sync", "fetched");
  expect(full.code).toBe(4);
  expect(full.stderr.trim().split("\n")).toHaveLength(1);
  expect(full.stderr).toContain("the disk filled up while fetching from");
  expect(git(pack, "rev-parse", "HEAD")).toBe(before);
  const objects = readdirSync(join(pack, ".git", "objects"), { recursive: true, encoding: "utf8" });
  expect(objects.filter((p) => p.includes("grex-tmp") || p.endsWith(".tmp"))).toEqual([]);
  rmSync(filler);
  const healed = await t.grex("sync", "fetched");
  expect(healed.code).toBe(0);
  expect(git(pack, "rev-parse", "HEAD")).toBe(target);
  expect(git(pack, "status", "--porcelain")).toBe("");
  expect(git(pack, "fsck", "--no-dangling")).toBe("");
});
