// doctor's view of the pack graph as it is on disk: a child that repeats an
// ancestor's repository (a children cycle), a depends_on naming no pack in the
// workspace, a depends_on cycle. `add` refuses all three before registering;
// this finds them in workspaces that got them another way (an upstream edit).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { toGrexError } from "../core/base/errors.ts";
import type { LockEntry } from "../core/workspace/lockfile.ts";
import type { PackEntry } from "../core/workspace/manifest.ts";
import { planChecks } from "../core/sync/plan.ts";
import { newNode, resolveChildUrl, type TreeNode } from "../core/sync/tree.ts";
import type { Workspace } from "../core/base/workspace.ts";

const urlKey = (url: string) => url.replace(/\/+$/, "").replace(/\.git$/, "");

export async function graphProblems(
  ws: Workspace,
  state: Map<string, PackEntry>,
  lock: Map<string, LockEntry>,
): Promise<Array<{ pack: string | null; detail: string }>> {
  const { loadPackYaml } = await import("../core/pack/load.ts");
  const byId = new Map<string, TreeNode>();
  const nodes: TreeNode[] = [];
  const addNode = async (id: string, url: string, parent: TreeNode | null) => {
    const dir = join(ws.root, id);
    const node = newNode({ id, path: id, dir, url, ref: null, recordedType: "meta", depth: parent ? parent.depth + 1 : 0, parent });
    if (existsSync(dir)) {
      try {
        node.manifest = await loadPackYaml(dir);
      } catch {
        // an invalid pack.yaml is the pack-schema check's finding
      }
    }
    byId.set(id, node);
    nodes.push(node);
  };
  for (const p of state.values()) await addNode(p.id, p.url, null);
  // Children as recorded by the last sync, parents before children.
  for (const e of [...lock.values()].sort((a, b) => a.id.length - b.id.length)) {
    const parent = byId.get(e.id.slice(0, e.id.lastIndexOf("/")));
    if (e.id.includes("/") && parent && e.url) await addNode(e.id, e.url, parent);
  }

  const out: Array<{ pack: string | null; detail: string }> = [];
  for (const n of nodes) {
    for (const child of n.manifest?.children ?? []) {
      const url = resolveChildUrl(n.url, child.url);
      const chain: TreeNode[] = [];
      for (let a: TreeNode | null = n; a; a = a.parent) chain.unshift(a);
      if (chain.some((a) => urlKey(a.url) === urlKey(url))) {
        out.push({
          pack: n.id,
          detail: `children form a cycle: ${[...chain.map((a) => a.id), `${n.id}/${child.path}`].join(" -> ")} (${url} is cloned again inside itself); remove that child entry`,
        });
      }
    }
  }
  try {
    const known = nodes.map((n) => ({ id: n.id, url: n.url, name: n.manifest?.name ?? null }));
    planChecks(nodes, known);
  } catch (err) {
    out.push({ pack: null, detail: toGrexError(err).message });
  }
  return out;
}
