// mkdir: create a directory (and parents); teardown removes only what grex created, if empty.
import { mkdirSync, readdirSync, rmdirSync } from "node:fs";
import { dirname } from "node:path";
import * as v from "valibot";
import { failed, lstatOrNull, targetPath } from "./paths.ts";
import type { ActionContext, ActionDef, ActionOutcome } from "./types.ts";

const Args = v.strictObject({
  path: v.pipe(v.string(), v.minLength(1)),
  mode: v.optional(v.pipe(v.union([v.string(), v.number()]), v.transform(String), v.regex(/^[0-7]{3,4}$/, "must be an octal mode like 755")), "755"),
});
type Args = v.InferOutput<typeof Args>;

const stateKey = (p: string) => `mkdir:${p}`;

function removeCreated(path: string, ctx: ActionContext): ActionOutcome {
  const created = ctx.state[stateKey(path)];
  if (!Array.isArray(created)) return { result: "already_satisfied", details: { path, note: "not created by grex" } };
  if (ctx.dryRun) return { result: "would_perform_change", details: { path, remove: created } };
  const removed: string[] = [];
  for (const dir of created as string[]) {
    const st = lstatOrNull(dir);
    if (!st?.isDirectory() || readdirSync(dir).length > 0) break; // keep anything no longer empty
    rmdirSync(dir);
    removed.push(dir);
  }
  delete ctx.state[stateKey(path)];
  return { result: removed.length ? "performed_change" : "already_satisfied", details: { path, removed } };
}

export const mkdirAction: ActionDef<Args> = {
  name: "mkdir",
  schema: Args,
  async apply(a, ctx) {
    const path = targetPath(a.path, ctx, "path");
    const st = lstatOrNull(path);
    if (st?.isDirectory()) return { result: "already_satisfied", details: { path } };
    if (st) return failed(`${path} exists and is not a directory`, { path });
    if (ctx.dryRun) return { result: "would_perform_change", details: { path } };
    // Remember every directory this creates, deepest first, so teardown removes exactly those.
    const created: string[] = [];
    for (let p = path; !lstatOrNull(p); p = dirname(p)) created.push(p);
    mkdirSync(path, { recursive: true, mode: Number.parseInt(a.mode, 8) });
    ctx.state[stateKey(path)] = created;
    return {
      result: "performed_change",
      details: { path, created },
      rollback: async () => {
        removeCreated(path, ctx);
        return `removed ${path}`;
      },
    };
  },
  async undo(a, ctx) {
    return removeCreated(targetPath(a.path, ctx, "path"), ctx);
  },
};
