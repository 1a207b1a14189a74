// mkdir: create a directory and its parents. Undo removes only directories grex
// created (recorded in the pack state) and only while they are empty.
import { chmodSync, mkdirSync, readdirSync, rmdirSync } from "node:fs";
import { dirname } from "node:path";
import * as v from "valibot";
import { confinedTarget, failed, guardTarget, lstatOrNull, statOrNull, targetPath } from "./paths.ts";
import type { ActionContext, ActionDef, ActionOutcome } from "./types.ts";

const Args = v.strictObject({
  path: v.pipe(v.string(), v.minLength(1, "must not be empty")),
  // YAML reads `mode: 755` as a number; both spellings mean octal.
  mode: v.optional(
    v.pipe(
      v.union([v.string(), v.number()], "must be an octal mode such as 755"),
      v.transform(String),
      v.regex(/^0?[0-7]{3,4}$/, "must be an octal mode such as 755"),
      // setuid/setgid hand privileges to whoever runs or creates files there; sticky only limits deletion (docs/cli.md).
      v.check((m) => (Number.parseInt(m, 8) & 0o6000) === 0, "must not set the setuid or setgid bit (4000, 2000); use a mode such as 755"),
    ),
    "755",
  ),
});
type Args = v.InferOutput<typeof Args>;

const stateKey = (p: string) => `mkdir:${p}`;

/** Remove the recorded directories, deepest first, stopping at the first that is not empty. */
function removeCreated(path: string, ctx: ActionContext): ActionOutcome {
  const created = ctx.state[stateKey(path)];
  if (!Array.isArray(created)) return { result: "already_satisfied", details: { path, note: "not created by grex" } };
  const dirs = created.filter((d): d is string => typeof d === "string");
  const present = dirs.filter((d) => statOrNull(d)?.isDirectory());
  if (present.length === 0) {
    if (!ctx.dryRun) delete ctx.state[stateKey(path)];
    return { result: "already_satisfied", details: { path } };
  }
  if (ctx.dryRun) return { result: "would_perform_change", details: { path, remove: present } };
  const removed: string[] = [];
  const kept: string[] = [];
  for (const dir of dirs) {
    const st = lstatOrNull(dir);
    if (!st) continue;
    if (!st.isDirectory() || readdirSync(dir).length > 0 || kept.length > 0) {
      kept.push(dir); // not empty (or holds a kept one): leave it, and everything above it
      continue;
    }
    rmdirSync(dir);
    removed.push(dir);
  }
  if (kept.length > 0) ctx.state[stateKey(path)] = kept;
  else delete ctx.state[stateKey(path)];
  return {
    result: removed.length > 0 ? "performed_change" : "already_satisfied",
    details: { path, removed, ...(kept.length > 0 ? { kept_not_empty: kept } : {}) },
  };
}

export const mkdirAction: ActionDef<Args> = {
  name: "mkdir",
  schema: Args,
  async apply(a, ctx) {
    const path = confinedTarget(a.path, ctx, "path");
    const st = statOrNull(path);
    if (st?.isDirectory()) return { result: "already_satisfied", details: { path } };
    if (lstatOrNull(path)) return failed(`${path} exists and is not a directory; remove it or choose another path`, { path });
    // Every missing directory from the top down to `path`, deepest first.
    const missing: string[] = [];
    for (let p = path; !lstatOrNull(p) && dirname(p) !== p; p = dirname(p)) missing.push(p);
    for (const p of missing) guardTarget(p, ctx, "path", a.path);
    const blocker = dirname(missing.at(-1) ?? path);
    if (!statOrNull(blocker)?.isDirectory()) {
      return failed(`${blocker} is in the way of ${path} (it is not a directory); remove it or choose another path`, { path });
    }
    if (ctx.dryRun) {
      for (const p of missing) ctx.planned.add(p);
      return { result: "would_perform_change", details: { path, create: missing } };
    }
    const mode = Number.parseInt(a.mode, 8);
    mkdirSync(path, { recursive: true, mode });
    chmodSync(path, mode); // the umask must not weaken or strengthen the declared mode
    const prior = ctx.state[stateKey(path)];
    const recorded = Array.isArray(prior) ? [...missing, ...prior.filter((p) => !missing.includes(p))] : missing;
    ctx.state[stateKey(path)] = recorded;
    return {
      result: "performed_change",
      details: { path, created: missing },
      rollback: async () => {
        const removed: string[] = [];
        for (const dir of missing) {
          if (!statOrNull(dir)?.isDirectory() || readdirSync(dir).length > 0) break;
          rmdirSync(dir);
          removed.push(dir);
        }
        if (Array.isArray(prior)) ctx.state[stateKey(path)] = prior;
        else delete ctx.state[stateKey(path)];
        return `removed ${removed.length > 0 ? removed.join(", ") : "nothing (not empty)"}`;
      },
    };
  },
  async undo(a, ctx) {
    return removeCreated(confinedTarget(a.path, ctx, "path"), ctx);
  },
  expect(a, ctx) {
    return { path: targetPath(a.path, ctx, "path") };
  },
};
