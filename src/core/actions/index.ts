// The action registry (name → definition), validation of one pack.yaml action
// item, and picking the actions of one kind for `grex run <action>`.
import { closest } from "../base/closest.ts";
import * as v from "valibot";
import { integrityError, pluginError } from "../base/errors.ts";
import { registerActionName } from "../base/registry.ts";
import { envAction } from "./env.ts";
import { execAction } from "./exec.ts";
import { mkdirAction } from "./mkdir.ts";
import { requireAction } from "./require.ts";
import { rmdirAction } from "./rmdir.ts";
import { symlinkAction } from "./symlink.ts";
import type { ActionDef, ActionItem } from "./types.ts";
import { whenAction } from "./when.ts";

const REGISTRY = new Map<string, ActionDef<unknown>>();

/** Add an action kind (plugins); its name becomes valid in pack.yaml. */
export function registerAction<A>(def: ActionDef<A>): void {
  REGISTRY.set(def.name, def as unknown as ActionDef<unknown>);
  registerActionName(def.name);
}

for (const def of [symlinkAction, envAction, mkdirAction, rmdirAction, requireAction, whenAction, execAction]) {
  registerAction(def as ActionDef<unknown>);
}

export const actionDef = (name: string): ActionDef<unknown> | undefined => REGISTRY.get(name);
export const actionNames = (): string[] => [...REGISTRY.keys()];

export interface ParsedAction {
  name: string;
  def: ActionDef<unknown>;
  /** Validated args with defaults filled in; variables are not expanded yet (that happens at run time). */
  args: unknown;
}

const isMapping = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

function describe(x: unknown): string {
  if (x === undefined || x === null) return "nothing";
  if (Array.isArray(x)) return "a list";
  if (typeof x === "object") return "a mapping";
  const s = JSON.stringify(x) ?? String(x);
  return `${typeof x} ${s.length > 40 ? `${s.slice(0, 37)}...` : s}`;
}

const EXPECTED: Record<string, string> = {
  string: "a string",
  boolean: "true or false",
  number: "a number",
  Array: "a list",
  Object: "a mapping",
};

/** `.mode`, `.cmd[1]`, `.all_of[0].os` */
function issuePath(issue: v.BaseIssue<unknown>): string {
  return (issue.path ?? []).map((p) => (typeof p.key === "number" ? `[${p.key}]` : `.${String(p.key)}`)).join("");
}

/** One clause for an issue: "is missing", "must be a string (got number 5)", or the schema's own message. */
function issueReason(issue: v.BaseIssue<unknown>, allowed: string[]): string {
  const reason = baseReason(issue, allowed);
  if (issue.type !== "picklist" || typeof issue.input !== "string") return reason;
  // An enum value (scope, os, kind, on_fail) one or two edits away from an option: say which.
  const options = [...(issue.expected ?? "").matchAll(/"([^"]*)"/g)].map((m) => m[1] as string);
  const hint = closest(issue.input, options, 3);
  if (hint === undefined) return reason;
  const cut = reason.indexOf(";");
  return cut < 0 ? `${reason} (did you mean ${hint}?)` : `${reason.slice(0, cut)} (did you mean ${hint}?)${reason.slice(cut)}`;
}

function baseReason(issue: v.BaseIssue<unknown>, allowed: string[]): string {
  const last = issue.path?.at(-1);
  const isKey = last?.type === "object" && issue.kind === "schema" && /object$/.test(issue.type);
  if (isKey && issue.expected === "never") return `is not a known field; remove it (allowed: ${allowed.join(", ")})`;
  if (isKey) return "is missing; add it";
  if (issue.kind === "schema" && !issue.message.startsWith("Invalid type:") && !issue.message.startsWith("Invalid key:")) {
    return issue.message;
  }
  if (issue.kind === "schema") {
    const expected = issue.type === "picklist" ? `one of ${issue.expected?.replace(/^\(|\)$/g, "") ?? ""}` : (EXPECTED[issue.expected ?? ""] ?? issue.expected);
    return `must be ${expected} (got ${describe(issue.input)})`;
  }
  return issue.message;
}

/**
 * Validate one `{<name>: args}` item (and, for `when`, its nested items).
 * `where` names the item ("actions[1]", or "<file>: actions[1]"); errors name
 * the field path ("actions[1].mkdir.mode ...") in one sentence. Unknown action → plugin error.
 */
export function parseActionItem(item: unknown, where: string): ParsedAction {
  if (!isMapping(item)) {
    throw integrityError(`${where} must be a mapping with one action key (got ${describe(item)}); write it as '- mkdir: { path: ... }'.`);
  }
  const keys = Object.keys(item);
  if (keys.length !== 1) {
    throw integrityError(
      `${where} has ${keys.length === 0 ? "no action key" : `${keys.length} keys (${keys.join(", ")})`} but an action item takes exactly one; write one list item per action.`,
    );
  }
  const name = keys[0] as string;
  const def = REGISTRY.get(name);
  if (!def) {
    throw pluginError(`${where} uses unknown action '${name}'; use one of ${actionNames().join(", ")}, or install the plugin that provides it.`);
  }
  const parsed = v.safeParse(def.schema, item[name] ?? {});
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const reason = issueReason(issue, allowedKeys(def.schema));
    throw integrityError(`${where}.${name}${issuePath(issue)} ${reason}${reason.includes(";") ? "" : "; fix it in pack.yaml"}.`, {
      field: `${where}.${name}${issuePath(issue)}`,
    });
  }
  if (name === "when") {
    const nested = (parsed.output as { actions: unknown[] }).actions;
    nested.forEach((n, i) => parseActionItem(n, `${where}.when.actions[${i}]`));
  }
  return { name, def, args: parsed.output };
}

/** Field names of a (possibly piped) strict object schema, for "allowed: ..." hints. */
function allowedKeys(schema: unknown): string[] {
  const pipe = (schema as { pipe?: unknown[] }).pipe;
  const obj = Array.isArray(pipe) ? pipe[0] : schema;
  return obj !== null && typeof obj === "object" && "entries" in obj ? Object.keys((obj as { entries: object }).entries) : [];
}

/**
 * The items of one action kind, for `grex run <action>`, with their top-level
 * index. A `when` holding such items (at any depth) is kept, pruned to them,
 * so its conditions still apply.
 */
export function collectNamedActions(items: readonly ActionItem[], name: string): Array<{ item: ActionItem; idx: number }> {
  const out: Array<{ item: ActionItem; idx: number }> = [];
  items.forEach((item, idx) => {
    const pruned = pick(item, name);
    if (pruned) out.push({ item: pruned, idx });
  });
  return out;
}

function pick(item: ActionItem, name: string): ActionItem | null {
  if (name in item) return item;
  const w = item.when;
  if (!isMapping(w) || !Array.isArray(w.actions)) return null;
  const inner = w.actions.filter(isMapping).map((a) => pick(a, name)).filter((a): a is ActionItem => a !== null);
  return inner.length > 0 ? { when: { ...w, actions: inner } } : null;
}
