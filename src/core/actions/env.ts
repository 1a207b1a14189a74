// env: set an environment variable.
//   scope user    → one managed block per variable in ~/.bashrc (created if
//                   missing), ~/.zshrc and ~/.config/fish/config.fish (each only
//                   if present):
//                     # >>> grex:env:NAME >>>
//                     export NAME='value'          (fish: set -gx NAME 'value')
//                     # <<< grex:env:NAME <<<
//   scope machine → the same block in /etc/environment as NAME='value' (needs root);
//                   single quotes, so a shell sourcing that file never runs
//                   `$(...)` or backticks from a value (pam_env strips the quotes);
//   scope session → the calling verb's own environment (later actions and child
//                   processes of the same call see it; other calls never do).
// Everything outside the block is kept byte for byte; undo takes out exactly
// what apply put in (restoring an earlier block body, dropping a line break it
// had to add, deleting a file it created) and leaves a block holding any other
// value alone.
import { accessSync, constants, existsSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import * as v from "valibot";
import { errText, expandField, failed, home, rewriteFile } from "./paths.ts";
import type { ActionContext, ActionDef, ActionOutcome } from "./types.ts";
import { blockBody, dropBlock, openMarker, setBlock, UnclosedBlock } from "./env-block.ts";

const Args = v.strictObject({
  name: v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be a variable name (letters, digits, _; not starting with a digit)")),
  value: v.pipe(
    v.union([v.string(), v.number(), v.boolean()], "must be a string"),
    v.transform(String),
    v.check((s) => !/[\r\n\0]/.test(s), "must be a single line (no line breaks)"),
  ),
  scope: v.optional(v.picklist(["user", "machine", "session"]), "user"),
});
type Args = v.InferOutput<typeof Args>;

// ------------------------------------------------------------ targets

const shQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
const fishQuote = (s: string) => `'${s.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
const isFish = (path: string) => path.endsWith(".fish");

interface Target {
  path: string;
  line: string;
}

function lineFor(path: string, scope: Args["scope"], name: string, value: string): string {
  if (scope === "machine") return `${name}='${value}'`;
  return isFish(path) ? `set -gx ${name} ${fishQuote(value)}` : `export ${name}=${shQuote(value)}`;
}

function targetFiles(scope: Args["scope"], ctx: ActionContext): string[] {
  if (scope === "machine") return [ctx.machineEnvFile];
  const h = home(ctx);
  const optional = [join(h, ".zshrc"), join(h, ".config", "fish", "config.fish")].filter((p) => existsSync(p));
  return [join(h, ".bashrc"), ...optional];
}

const read = (p: string): string | null => (existsSync(p) ? readFileSync(p, "utf8") : null);

// ------------------------------------------------------------ state

/** What apply did to one file, so undo can take exactly that out. */
interface FileRecord {
  created: boolean;
  addedEol: boolean;
  /** The block body before grex's first write (null: there was no block). */
  previous: string[] | null;
  /** The line grex wrote. */
  wrote: string;
}

interface Saved {
  files: Record<string, FileRecord>;
}

const stateKey = (a: Args) => `env:${a.scope}:${a.name}`;

/** Put one file back as `rec` says (a file grex created and that is now empty is deleted). */
function restoreFile(path: string, name: string, rec: Omit<FileRecord, "wrote">): void {
  const text = read(path);
  if (text === null) return;
  const next = rec.previous ? setBlock(text, name, rec.previous).text : dropBlock(text, name, rec.addedEol);
  if (next === text) return;
  if (next === "" && rec.created) rmSync(path);
  else rewriteFile(path, next);
}

function machineProblem(file: string): string | null {
  try {
    accessSync(existsSync(file) ? file : dirname(file), constants.W_OK);
    return null;
  } catch {
    return `env scope machine writes ${file}, which this user cannot write; run grex as root (sudo) or use scope: user`;
  }
}

const unclosed = (path: string, a: Args, where: string) =>
  failed(`${path} has an unclosed '${openMarker(a.name)}' block (${where}); fix or remove that block by hand`, { file: path });

// ------------------------------------------------------------ session scope

function setVar(envs: Array<Record<string, string | undefined>>, name: string, value: string | undefined): void {
  for (const env of envs) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
}

function applySession(a: Args, value: string, ctx: ActionContext): ActionOutcome {
  const details = { name: a.name, scope: a.scope };
  if (ctx.processEnv[a.name] === value && ctx.env[a.name] === value) return { result: "already_satisfied", details };
  if (ctx.dryRun) return { result: "would_perform_change", details };
  const key = `${ctx.packId}\0${a.name}`;
  const before = ctx.processEnv[a.name];
  const beforeRun = ctx.env[a.name];
  if (!ctx.sessionSaved.has(key)) ctx.sessionSaved.set(key, before);
  setVar([ctx.processEnv, ctx.env], a.name, value);
  return {
    result: "performed_change",
    details,
    rollback: async () => {
      setVar([ctx.processEnv], a.name, before);
      setVar([ctx.env], a.name, beforeRun);
      ctx.sessionSaved.delete(key);
      return `restored ${a.name} in this process`;
    },
  };
}

function undoSession(a: Args, value: string, ctx: ActionContext): ActionOutcome {
  const details = { name: a.name, scope: a.scope };
  if (ctx.processEnv[a.name] !== value) return { result: "already_satisfied", details };
  if (ctx.dryRun) return { result: "would_perform_change", details };
  const key = `${ctx.packId}\0${a.name}`;
  setVar([ctx.processEnv, ctx.env], a.name, ctx.sessionSaved.get(key));
  ctx.sessionSaved.delete(key);
  return { result: "performed_change", details };
}

// ------------------------------------------------------------ the action

export const envAction: ActionDef<Args> = {
  name: "env",
  schema: Args,
  async apply(a, ctx) {
    const value = expandField(a.value, ctx, "value");
    if (a.scope === "session") return applySession(a, value, ctx);
    if (ctx.os === "windows") {
      return failed(`env scope ${a.scope} is not supported on Windows yet; use scope: session, or an exec action running setx`);
    }
    if (a.scope === "machine" && /['"]/.test(value)) {
      return failed(`the value of ${a.name} contains a quote character, which ${ctx.machineEnvFile} cannot hold; remove it`);
    }
    const targets: Target[] = targetFiles(a.scope, ctx).map((path) => ({ path, line: lineFor(path, a.scope, a.name, value) }));
    const pending: Target[] = [];
    for (const t of targets) {
      try {
        const body = blockBody(read(t.path) ?? "", a.name);
        if (body?.length !== 1 || body[0] !== t.line) pending.push(t);
      } catch (err) {
        if (err instanceof UnclosedBlock) return unclosed(t.path, a, err.message);
        throw err;
      }
    }
    const details = { name: a.name, scope: a.scope };
    if (pending.length === 0) return { result: "already_satisfied", details };
    if (a.scope === "machine") {
      const problem = machineProblem(ctx.machineEnvFile);
      if (problem) return failed(problem, { file: ctx.machineEnvFile });
    }
    if (ctx.dryRun) return { result: "would_perform_change", details: { ...details, files: pending.map((t) => t.path) } };

    const prior = ctx.state[stateKey(a)] as Saved | undefined;
    const saved: Saved = { files: { ...prior?.files } };
    const done: Array<{ path: string; rec: Omit<FileRecord, "wrote"> }> = [];
    const rollback = async () => {
      for (const d of [...done].reverse()) restoreFile(d.path, a.name, d.rec);
      if (prior) ctx.state[stateKey(a)] = prior;
      else delete ctx.state[stateKey(a)];
      return `took ${a.name} out of ${done.map((d) => d.path).join(", ")}`;
    };
    try {
      for (const t of pending) {
        const text = read(t.path);
        const next = setBlock(text ?? "", a.name, [t.line]);
        const rec = { created: text === null, addedEol: next.addedEol, previous: blockBody(text ?? "", a.name) };
        rewriteFile(t.path, next.text);
        done.push({ path: t.path, rec });
        const first = saved.files[t.path];
        saved.files[t.path] = first ? { ...first, wrote: t.line } : { ...rec, wrote: t.line };
      }
    } catch (err) {
      await rollback();
      return failed(`could not write ${a.name} into ${pending[done.length]?.path ?? "its file"} (${errText(err)}); check that file`, details);
    }
    ctx.state[stateKey(a)] = saved;
    return { result: "performed_change", details: { ...details, files: pending.map((t) => t.path) }, rollback };
  },

  async undo(a, ctx) {
    const value = expandField(a.value, ctx, "value");
    if (a.scope === "session") return undoSession(a, value, ctx);
    const details = { name: a.name, scope: a.scope };
    if (ctx.os === "windows") return { result: "noop", details };
    const saved = ctx.state[stateKey(a)] as Saved | undefined;
    const files = [...new Set([...targetFiles(a.scope, ctx), ...Object.keys(saved?.files ?? {})])];
    const todo: Array<{ path: string; rec: Omit<FileRecord, "wrote"> }> = [];
    for (const path of files) {
      const text = read(path);
      if (text === null) continue;
      let body: string[] | null;
      try {
        body = blockBody(text, a.name);
      } catch (err) {
        if (err instanceof UnclosedBlock) return unclosed(path, a, err.message);
        throw err;
      }
      const rec = saved?.files[path];
      const ours = rec?.wrote ?? lineFor(path, a.scope, a.name, value);
      // A block holding another value is not ours to remove.
      if (body?.length === 1 && body[0] === ours) todo.push({ path, rec: rec ?? { created: false, addedEol: false, previous: null } });
    }
    if (todo.length === 0) {
      if (!ctx.dryRun) delete ctx.state[stateKey(a)];
      return { result: "already_satisfied", details };
    }
    if (ctx.dryRun) return { result: "would_perform_change", details: { ...details, files: todo.map((t) => t.path) } };
    if (a.scope === "machine") {
      const problem = machineProblem(ctx.machineEnvFile);
      if (problem) return failed(problem, { file: ctx.machineEnvFile });
    }
    for (const t of todo) restoreFile(t.path, a.name, t.rec);
    delete ctx.state[stateKey(a)];
    return { result: "performed_change", details: { ...details, files: todo.map((t) => t.path) } };
  },
  // Session scope lives in one process: nothing to check later.
  expect(a, ctx) {
    if (a.scope === "session" || ctx.os === "windows") return null;
    const value = expandField(a.value, ctx, "value");
    const files = Object.fromEntries(targetFiles(a.scope, ctx).map((f) => [f, lineFor(f, a.scope, a.name, value)]));
    return { path: Object.keys(files)[0] ?? "", name: a.name, files };
  },
};
