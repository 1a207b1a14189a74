// Plan phase: everything that must hold before any action runs. A failure here
// is a hard error and no pack's actions run.
import { GrexError, integrityError } from "../errors.ts";
import { findCycle, cycleError } from "../pack/graph.ts";
import { checkDuplicateSymlinkDst } from "../pack/load.ts";
import { parseActionItem } from "../actions/index.ts";
import type { TreeNode } from "./tree.ts";
import { join } from "node:path";

const urlKey = (url: string) => url.replace(/\/+$/, "").replace(/\.git$/, "");

export interface KnownPack {
  id: string;
  url: string;
  name: string | null;
}

/**
 * Validate the loaded packs: action arguments, duplicate symlink targets,
 * depends_on resolution (against every pack known to the workspace) and
 * depends_on cycles.
 */
export function planChecks(nodes: TreeNode[], known: KnownPack[]): void {
  for (const node of nodes) {
    const m = node.manifest;
    if (!m) continue;
    const file = join(node.dir, ".grex", "pack.yaml");
    checkDuplicateSymlinkDst(m, file);
    m.actions.forEach((item, i) => parseActionItem(item, `${file}: actions[${i}]`));
    m.teardown?.forEach((item, i) => parseActionItem(item, `${file}: teardown[${i}]`));
  }

  const byName = new Map<string, KnownPack>();
  const byUrl = new Map<string, KnownPack>();
  for (const k of known) {
    byUrl.set(urlKey(k.url), k);
    byName.set(k.id, k);
    if (k.name) byName.set(k.name, k);
  }
  const resolveDep = (dep: string): KnownPack | undefined => byName.get(dep) ?? byUrl.get(urlKey(dep));

  const edges = new Map<string, string[]>();
  for (const node of nodes) {
    const deps = node.manifest?.depends_on ?? [];
    const targets: string[] = [];
    for (const dep of deps) {
      const hit = resolveDep(dep);
      if (!hit) {
        throw new GrexError(
          "pack_op",
          `Pack '${node.id}' depends on '${dep}', which is not in this workspace; add it (grex add <url>) or remove it from depends_on.`,
        );
      }
      targets.push(hit.id);
    }
    edges.set(node.id, targets);
  }
  const cycle = findCycle([...edges.keys()], (id) => edges.get(id) ?? []);
  if (cycle) throw cycleError("depends_on", cycle);
}

/** Order in which packs' own actions run: every pack after its depends_on targets and its children. */
export function installOrder(nodes: TreeNode[]): TreeNode[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const done = new Set<string>();
  const out: TreeNode[] = [];
  const visit = (n: TreeNode, stack: Set<string>) => {
    if (done.has(n.id)) return;
    if (stack.has(n.id)) throw integrityError(`Pack graph has a cycle through '${n.id}'; grex doctor shows it.`);
    stack.add(n.id);
    for (const c of n.children) visit(c, stack);
    for (const dep of n.manifest?.depends_on ?? []) {
      const target = [...byId.values()].find((x) => x.id === dep || x.manifest?.name === dep || urlKey(x.url) === urlKey(dep));
      if (target) visit(target, stack);
    }
    stack.delete(n.id);
    done.add(n.id);
    out.push(n);
  };
  for (const n of nodes) visit(n, new Set());
  return out;
}
