// Plan phase: everything that must hold before any action runs. A failure here
// is a hard error and no pack's actions run.
import { GrexError, integrityError } from "../base/errors.ts";
import { findCycle, cycleError } from "../pack/graph.ts";
import { checkDuplicateSymlinkDst } from "../pack/load.ts";
import { parseActionItem } from "../actions/index.ts";
import { isKnownAction } from "../base/registry.ts";
import type { MoreChecks, Problem } from "../pack/schema.ts";
import type { TreeNode } from "./tree.ts";
import { join, resolve } from "node:path";
import { expandVars, homeOf } from "../base/vars.ts";
import { urlKey } from "../base/naming.ts";

export interface KnownPack {
  id: string;
  url: string;
  name: string | null;
}

/**
 * The one depends_on rule: an entry names a pack by id, else by pack.yaml
 * name, else by URL (trailing `/` and `.git` ignored). Checks and install
 * order both resolve through this, so they cannot disagree.
 */
export function dependencyResolver(packs: readonly KnownPack[]): (dep: string) => KnownPack | undefined {
  const byId = new Map<string, KnownPack>();
  const byName = new Map<string, KnownPack>();
  const byUrl = new Map<string, KnownPack>();
  for (const k of packs) {
    if (!byId.has(k.id)) byId.set(k.id, k);
    if (k.name && !byName.has(k.name)) byName.set(k.name, k);
    if (!byUrl.has(urlKey(k.url))) byUrl.set(urlKey(k.url), k);
  }
  return (dep) => byId.get(dep) ?? byName.get(dep) ?? byUrl.get(urlKey(dep));
}

/**
 * Validate the loaded packs: action arguments, duplicate symlink targets,
 * depends_on resolution (against every pack known to the workspace) and
 * depends_on cycles.
 */
export function planChecks(nodes: TreeNode[], known: KnownPack[], env?: Record<string, string | undefined>): void {
  for (const node of nodes) {
    const m = node.manifest;
    if (!m) continue;
    const file = join(node.dir, ".grex", "pack.yaml");
    checkDuplicateSymlinkDst(m, file, env && ((dst) => expandTarget(dst, env, node.dir)));
    m.actions.forEach((item, i) => parseActionItem(item, `${file}: actions[${i}]`));
    m.teardown?.forEach((item, i) => parseActionItem(item, `${file}: teardown[${i}]`));
  }

  const resolveDep = dependencyResolver(known);

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

/**
 * For the parallel install phase: the packs each pack waits for, the same
 * edges installOrder follows (its children and its depends_on targets among
 * `nodes`; the children of a child not in `nodes` count as its own).
 */
export function prerequisitesOf(nodes: readonly TreeNode[], known: readonly KnownPack[] = knownOf(nodes)): (n: TreeNode) => TreeNode[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const resolveDep = dependencyResolver(known);
  return (n) => {
    const out: TreeNode[] = [];
    // A child that installs nothing (dirty, failed to fetch) passes the wait on to its own children.
    const addChildren = (of: TreeNode) => {
      for (const c of of.children) {
        const hit = byId.get(c.id);
        if (hit) out.push(hit);
        else addChildren(c);
      }
    };
    addChildren(n);
    for (const dep of n.manifest?.depends_on ?? []) {
      const hit = resolveDep(dep);
      const target = hit && byId.get(hit.id);
      if (target && target !== n) out.push(target);
    }
    return out;
  };
}

/**
 * Every action argument problem of a pack.yaml document (actions and
 * teardown, `when` blocks included), for the loader to report together with
 * the document's own problems. Items the schema already refuses (not a
 * one-key mapping, an unknown action) are left to it.
 */
export const actionProblems: MoreChecks = (doc) => {
  const out: Problem[] = [];
  for (const list of ["actions", "teardown"] as const) {
    const items = doc[list];
    if (!Array.isArray(items)) continue;
    items.forEach((item: unknown, i) => {
      if (item === null || typeof item !== "object" || Array.isArray(item)) return;
      const keys = Object.keys(item);
      if (keys.length !== 1 || !isKnownAction(keys[0] as string)) return;
      const where = `${list}[${i}]`;
      try {
        parseActionItem(item, where);
      } catch (err) {
        if (!(err instanceof GrexError)) throw err;
        const field = typeof err.data?.field === "string" && err.message.startsWith(err.data.field) ? err.data.field : where;
        out.push({ field, reason: err.message.slice(field.length).trim(), plugin: err.kind === "plugin" });
      }
    });
  }
  return out;
};

/**
 * A symlink `dst` as the action resolves it (variables, a leading `~`, then
 * against the pack), for the duplicate check. A variable that is not set is
 * left as written: the action reports it with its own message.
 */
function expandTarget(dst: string, env: Record<string, string | undefined>, packDir: string): string {
  let p = dst;
  try {
    p = expandVars(dst, env, "dst");
  } catch {
    return dst;
  }
  if (p === "~" || p.startsWith("~/")) p = homeOf(env) + p.slice(1);
  return resolve(packDir, p);
}

const knownOf = (nodes: readonly TreeNode[]): KnownPack[] => nodes.map((n) => ({ id: n.id, url: n.url, name: n.manifest?.name ?? null }));

/**
 * Order in which packs' own actions run: every pack after its depends_on
 * targets and its children. `known` is what planChecks resolved against (the
 * whole workspace), so both resolve every entry to the same pack.
 */
export function installOrder(nodes: TreeNode[], known: readonly KnownPack[] = knownOf(nodes)): TreeNode[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const resolveDep = dependencyResolver(known);
  const done = new Set<string>();
  const out: TreeNode[] = [];
  const visit = (n: TreeNode, stack: Set<string>) => {
    if (done.has(n.id)) return;
    if (stack.has(n.id)) throw integrityError(`Pack graph has a cycle through '${n.id}'; grex doctor shows it.`);
    stack.add(n.id);
    for (const c of n.children) visit(c, stack);
    for (const dep of n.manifest?.depends_on ?? []) {
      const hit = resolveDep(dep);
      const target = hit && byId.get(hit.id);
      if (target) visit(target, stack);
    }
    stack.delete(n.id);
    done.add(n.id);
    out.push(n);
  };
  for (const n of nodes) visit(n, new Set());
  return out;
}
