// `grex update --dissociate`: each selected pack (the ids given, else every
// pack, children included) that borrows objects through
// objects/info/alternates (the shared object cache) gets them copied into its
// own store and stops borrowing (core/git/dissociate.ts), under its pack and
// backend locks. Nothing is fetched and no work tree moves.
import { existsSync } from "node:fs";
import { unknownPackId } from "../core/base/pack-ids.ts";
import { withBackendLock, withPackLock } from "../core/locks/locks.ts";
import type { VerbContext } from "./types.ts";

export async function dissociatePacks(ctx: VerbContext, ids: readonly string[], dryRun: boolean, signal: AbortSignal): Promise<Array<{ id: string; objects: number }>> {
  const ws = ctx.workspace();
  const { loadWorkspaceView } = await import("../core/workspace/packs.ts");
  const view = await loadWorkspaceView(ws, ctx.warn);
  for (const id of ids) if (!view.packs.some((n) => n.id === id)) throw unknownPackId(id, view.manifest.keys(), ws.manifestPath);
  const chosen = view.packs.filter((n) => ids.length === 0 || ids.includes(n.id) || ids.some((id) => n.id.startsWith(`${id}/`)));
  const { dissociate } = await import("../core/git/dissociate.ts");
  const { workTreeGitdir } = await import("../core/git/backend.ts");
  const { alternatesFileOf, objectsDir } = await import("../core/git/layout/layout.ts");
  const out: Array<{ id: string; objects: number }> = [];
  for (const node of chosen) {
    const gitdir = workTreeGitdir(node.dir);
    if (gitdir === null || !existsSync(alternatesFileOf(objectsDir(gitdir)))) continue;
    if (dryRun) {
      out.push({ id: node.id, objects: 0 });
      continue;
    }
    const n = await withPackLock(ws, node.dir, signal, () => withBackendLock(ws, node.dir, signal, () => dissociate(node.dir, signal)));
    if (n !== null) out.push({ id: node.id, objects: n });
  }
  return out;
}
