// env: set an environment variable for the user (managed block per variable in
// the shell rc files), the machine (/etc/environment) or this process only.
import { existsSync, readFileSync, rmSync, accessSync, constants } from "node:fs";
import { dirname, join } from "node:path";
import * as v from "valibot";
import { atomicWriteFile } from "../fsutil.ts";
import { parseBlocks, removeBlock, upsertBlock } from "../gitignore.ts";
import { expandVars } from "../vars.ts";
import { failed } from "./paths.ts";
import type { ActionContext, ActionDef, ActionOutcome } from "./types.ts";

const Args = v.strictObject({
  name: v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be a variable name")),
  value: v.pipe(v.union([v.string(), v.number(), v.boolean()]), v.transform(String)),
  scope: v.optional(v.picklist(["user", "machine", "session"]), "user"),
  /** Test seam: the file `machine` scope writes (default /etc/environment). */
  machine_file: v.optional(v.string()),
});
type Args = v.InferOutput<typeof Args>;

const shQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

interface RcFile {
  path: string;
  line: string;
}

function userFiles(name: string, value: string, home: string): RcFile[] {
  const files: RcFile[] = [{ path: join(home, ".bashrc"), line: `export ${name}=${shQuote(value)}` }];
  const zsh = join(home, ".zshrc");
  if (existsSync(zsh)) files.push({ path: zsh, line: `export ${name}=${shQuote(value)}` });
  const fish = join(home, ".config", "fish", "config.fish");
  if (existsSync(fish)) files.push({ path: fish, line: `set -gx ${name} ${shQuote(value)}` });
  return files;
}

const blockId = (name: string) => `env:${name}`;
const read = (p: string) => (existsSync(p) ? readFileSync(p, "utf8") : "");

function machineFile(a: Args): string {
  return a.machine_file ?? "/etc/environment";
}

function files(a: Args, value: string, ctx: ActionContext): RcFile[] {
  if (a.scope === "machine") return [{ path: machineFile(a), line: `${a.name}="${value.replaceAll('"', '\\"')}"` }];
  return userFiles(a.name, value, ctx.env.HOME ?? "");
}

interface Saved {
  previous: Record<string, string[] | null>; // file → previous block body (null: none)
  created: string[]; // files that did not exist before
}

const stateKey = (a: Args) => `env:${a.scope}:${a.name}`;

function restore(a: Args, ctx: ActionContext, saved: Saved | undefined): string[] {
  const touched: string[] = [];
  for (const f of files(a, "", ctx)) {
    if (!existsSync(f.path)) continue;
    const text = read(f.path);
    if (!parseBlocks(text).blocks.has(blockId(a.name))) continue;
    const prev = saved?.previous[f.path] ?? null;
    const next = prev ? upsertBlock(text, blockId(a.name), prev, f.path) : removeBlock(text, blockId(a.name), f.path);
    if (next === "" && saved?.created.includes(f.path)) rmSync(f.path);
    else atomicWriteFile(f.path, next);
    touched.push(f.path);
  }
  return touched;
}

export const envAction: ActionDef<Args> = {
  name: "env",
  schema: Args,
  async apply(a, ctx) {
    const value = expandVars(a.value, ctx.env, `${ctx.where}.value of pack '${ctx.packId}'`);
    if (a.scope === "session") {
      if (ctx.env[a.name] === value) return { result: "already_satisfied", details: { name: a.name, scope: a.scope } };
      if (ctx.dryRun) return { result: "would_perform_change", details: { name: a.name, scope: a.scope } };
      const before = ctx.env[a.name];
      ctx.env[a.name] = value;
      return {
        result: "performed_change",
        details: { name: a.name, scope: a.scope },
        rollback: async () => {
          ctx.env[a.name] = before;
          return `restored ${a.name}`;
        },
      };
    }
    const targets = files(a, value, ctx);
    if (a.scope === "machine") {
      const file = machineFile(a);
      try {
        accessSync(existsSync(file) ? file : dirname(file), constants.W_OK);
      } catch {
        return failed(`scope machine writes ${file}, which this user cannot write; run grex as root or use scope: user`, { file });
      }
    }
    const pending = targets.filter((f) => parseBlocks(read(f.path)).blocks.get(blockId(a.name))?.join("\n") !== f.line);
    if (pending.length === 0) return { result: "already_satisfied", details: { name: a.name, scope: a.scope } };
    if (ctx.dryRun) return { result: "would_perform_change", details: { name: a.name, scope: a.scope, files: pending.map((f) => f.path) } };
    const saved: Saved = (ctx.state[stateKey(a)] as Saved | undefined) ?? { previous: {}, created: [] };
    for (const f of pending) {
      const text = read(f.path);
      if (!(f.path in saved.previous)) saved.previous[f.path] = parseBlocks(text).blocks.get(blockId(a.name)) ?? null;
      if (!existsSync(f.path) && !saved.created.includes(f.path)) saved.created.push(f.path);
      atomicWriteFile(f.path, upsertBlock(text, blockId(a.name), [f.line], f.path));
    }
    ctx.state[stateKey(a)] = saved;
    return {
      result: "performed_change",
      details: { name: a.name, scope: a.scope, files: pending.map((f) => f.path) },
      rollback: async () => `restored ${restore(a, ctx, saved).join(", ")}`,
    };
  },
  async undo(a, ctx): Promise<ActionOutcome> {
    if (a.scope === "session") return { result: "noop", details: { name: a.name, scope: a.scope } };
    const present = files(a, "", ctx).filter((f) => parseBlocks(read(f.path)).blocks.has(blockId(a.name)));
    if (present.length === 0) return { result: "already_satisfied", details: { name: a.name, scope: a.scope } };
    if (ctx.dryRun) return { result: "would_perform_change", details: { name: a.name, files: present.map((f) => f.path) } };
    const touched = restore(a, ctx, ctx.state[stateKey(a)] as Saved | undefined);
    delete ctx.state[stateKey(a)];
    return { result: "performed_change", details: { name: a.name, scope: a.scope, files: touched } };
  },
};
