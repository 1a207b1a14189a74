// The workspace view (src/core/workspace/packs.ts): top-level packs from the manifest in
// fold order, each followed by its children from the lockfile, with depth,
// parent, lock entry and a directory equal to path.join(root, path) — also for
// a workspace at the filesystem root. Real files in temp dirs.
import { afterEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeEvent } from "../../src/core/workspace/manifest.ts";
import { loadWorkspaceView } from "../../src/core/workspace/packs.ts";
import { type Workspace, workspaceAt } from "../../src/core/base/workspace.ts";
import { TmpDirs } from "../helpers/tmp.ts";

const tmp = new TmpDirs();
afterEach(() => tmp.cleanup());

const TS = "2026-01-01T00:00:00.000Z";
const add = (id: string, path = id) => JSON.stringify(makeEvent("add", id, { url: `https://example.invalid/${id}.git`, path, type: "meta", ref: null }, TS));
const lockLine = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id, sha: "", branch: "main", installed_at: TS, actions_hash: "", type: "meta", ...extra });

function workspace(manifest: string[], lock: string[], root?: string): Workspace {
  const dir = tmp.make("grex-view-");
  const ws = workspaceAt(dir);
  writeFileSync(ws.manifestPath, manifest.map((l) => `${l}\n`).join(""));
  writeFileSync(ws.lockPath, lock.map((l) => `${l}\n`).join(""));
  return root === undefined ? ws : { ...ws, root };
}

describe("loadWorkspaceView", () => {
  test("pre-order with children from the lockfile; dirs are join(root, path)", async () => {
    const ws = workspace(
      [add("tools"), add("notes", "docs/notes"), add("solo")],
      [lockLine("tools", { sha: "a".repeat(40) }), lockLine("tools/sub", { url: "https://example.invalid/sub.git", ref: "v1" }), lockLine("tools/sub/deep", { url: "u" })],
    );
    const view = await loadWorkspaceView(ws, () => {});
    expect(view.packs.map((p) => [p.id, p.depth, p.parent])).toEqual([
      ["tools", 0, null],
      ["tools/sub", 1, "tools"],
      ["tools/sub/deep", 2, "tools/sub"],
      ["notes", 0, null],
      ["solo", 0, null],
    ]);
    for (const p of view.packs) expect(p.dir).toBe(join(ws.root, p.path));
    expect(view.packs[0]?.lock?.sha).toBe("a".repeat(40));
    expect(view.packs[1]).toMatchObject({ url: "https://example.invalid/sub.git", ref: "v1" });
    expect(view.packs[3]?.path).toBe("docs/notes");
    expect(view.packs[4]?.lock).toBeUndefined();
  });

  test("a workspace at the filesystem root has no doubled slash", async () => {
    const ws = workspace([add("a"), add("b", "x/b")], [lockLine("a/c", { url: "u" })], "/");
    const view = await loadWorkspaceView(ws, () => {});
    expect(view.packs.map((p) => p.dir)).toEqual([join("/", "a"), join("/", "a/c"), join("/", "x/b")]);
    expect(view.packs.map((p) => p.dir)).toEqual(["/a", "/a/c", "/x/b"]);
  });
});
