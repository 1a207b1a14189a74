// Is everything a new tip needs here? Run before any ref moves to a fetched
// object: a fetch killed half-way (or a server that sent too little) can
// leave a commit whose tree or blobs are missing, and a ref must never point
// at such a commit — the next checkout would fail for good. The walk starts
// at the new tips and stops at commits our refs already name (they were
// checked when they moved) and at a shallow boundary.
import * as fs from "node:fs";
import { join } from "node:path";
import { packOpError } from "../errors.ts";
import { displayUrl } from "./url.ts";
import { ObjectStore } from "./object-store.ts";
import { ObjectPresence } from "./objects.ts";
import { CANONICAL_MODES } from "./path-verify.ts";
import { listRefsSync, resolveRefSync } from "./refs.ts";

/** The commits our refs name now: complete by the rule above. */
export function knownTips(gitdir: string): Set<string> {
  const out = new Set<string>();
  const head = resolveRefSync(gitdir, "HEAD");
  if (head) out.add(head);
  for (const prefix of ["refs/heads/", "refs/remotes/", "refs/tags/"]) for (const oid of listRefsSync(gitdir, prefix).values()) out.add(oid);
  return out;
}

function shallowSet(gitdir: string): Set<string> {
  try {
    return new Set(fs.readFileSync(join(gitdir, "shallow"), "utf8").split("\n").filter((l) => l.length === 40));
  } catch {
    return new Set();
  }
}

/**
 * The first object reachable from `tips` that is missing here, or null when
 * every commit, tree and blob they need is present. `stop`: commits taken as
 * complete (default: what our refs name).
 */
export function firstMissing(gitdir: string, tips: Iterable<string>, stop: Set<string> = knownTips(gitdir)): string | null {
  const store = new ObjectStore(gitdir);
  const presence = new ObjectPresence(gitdir);
  const shallow = shallowSet(gitdir);
  const seen = new Set<string>();
  const stack: string[] = [];
  const want = (oid: string) => {
    if (seen.has(oid) || stop.has(oid)) return;
    seen.add(oid);
    stack.push(oid);
  };
  try {
    for (const t of tips) want(t);
    while (stack.length > 0) {
      const oid = stack.pop() as string;
      const obj = store.read(oid);
      if (!obj) {
        if (!presence.has(oid)) return oid;
        continue; // present but not readable natively (an unusual pack): trusted, as git's reader would read it
      }
      if (obj.type === "commit") {
        const c = store.readCommit(oid);
        if (!c) return oid;
        want(c.tree);
        if (!shallow.has(oid)) c.parents.forEach(want);
      } else if (obj.type === "tree") {
        const entries = store.readTree(oid);
        if (!entries) return oid;
        for (const e of entries) {
          // A submodule's commit lives in the submodule; an entry of a mode git cannot hold is never checked out (the checkout refuses its tree, naming it).
          if (e.mode === "160000" || !CANONICAL_MODES.has(e.mode)) continue;
          if (e.mode === "040000") want(e.oid);
          else if (!seen.has(e.oid)) {
            seen.add(e.oid);
            if (!presence.has(e.oid)) return e.oid; // blobs: presence is enough
          }
        }
      } else if (obj.type === "tag") {
        const m = /^object ([0-9a-f]{40})$/m.exec(obj.data.toString("latin1", 0, Math.min(obj.data.length, 200)));
        if (!m) return oid;
        want(m[1] as string);
      }
    }
    return null;
  } finally {
    store.close();
  }
}

/** Throw (one sentence, exit 4) unless everything `tips` need is here; called right before refs move to them. */
export function assertConnected(gitdir: string, url: string, tips: string[]): void {
  if (tips.length === 0) return;
  const gap = firstMissing(gitdir, tips);
  if (gap !== null) {
    throw packOpError(`the fetch from ${displayUrl(url)} is incomplete (object ${gap.slice(0, 7)} is missing); no ref was moved — run grex sync again.`, { url });
  }
}
