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
  if (!parsed.success) throw actionArgsError(`${where}.${name}`, item[name], parsed.issues, allowedKeys(def.schema));
  if (name === "when") {
    const nested = (parsed.output as { actions: unknown[] }).actions;
    nested.forEach((n, i) => parseActionItem(n, `${where}.when.actions[${i}]`));
  }
  return { name, def, args: parsed.output };
}

const isKeyIssue = (issue: v.BaseIssue<unknown>) => issue.path?.at(-1)?.type === "object" && issue.kind === "schema" && /object$/.test(issue.type);
const keyOf = (issue: v.BaseIssue<unknown>) => String(issue.path?.at(-1)?.key ?? "");

/**
 * Every mistake of one action in one sentence. A misspelt key is named as
 * such (`has the unknown key pth (did you mean path?)`) instead of as the key
 * it leaves missing; every unknown key is named (valibot stops at the first);
 * other issues follow, one clause each.
 */
function actionArgsError(at: string, args: unknown, issues: readonly v.BaseIssue<unknown>[], allowed: string[]): Error {
  const unknownKeys = isMapping(args) && allowed.length > 0 ? Object.keys(args).filter((k) => !allowed.includes(k)) : [];
  const topKey = (issue: v.BaseIssue<unknown>) => (isKeyIssue(issue) && (issue.path?.length ?? 0) === 1 ? keyOf(issue) : undefined);
  const missing = new Set(issues.filter((i) => i.expected !== "never").flatMap((i) => topKey(i) ?? []));
  /** `sub`: the field below `at` (".mode", or "" for the action itself); `text`: the reason. */
  const clauses: Array<{ sub: string; text: string }> = [];
  const explained = new Set<string>();
  const stray: string[] = [];
  for (const key of unknownKeys) {
    const hint = closest(key, allowed, 2);
    if (hint !== undefined && missing.has(hint)) {
      explained.add(hint);
      clauses.push({ sub: "", text: `has the unknown key ${key} (did you mean ${hint}?)` });
    } else stray.push(key);
  }
  if (stray.length === 1) clauses.push({ sub: `.${stray[0]}`, text: `is not a known field; remove it (allowed: ${allowed.join(", ")})` });
  else if (stray.length > 1) {
    clauses.push({ sub: "", text: `has the unknown keys ${stray.slice(0, -1).join(", ")} and ${stray.at(-1)}; remove them (allowed: ${allowed.join(", ")})` });
  }
  for (const issue of issues) {
    const key = topKey(issue);
    if (key !== undefined && (issue.expected === "never" || explained.has(key))) continue;
    clauses.push({ sub: issuePath(issue), text: issueReason(issue, allowed) });
  }
  const first = clauses[0] ?? { sub: "", text: "is not valid" };
  if (clauses.length === 1) {
    return integrityError(`${at}${first.sub} ${first.text}${first.text.includes(";") ? "" : "; fix it in pack.yaml"}.`, { field: `${at}${first.sub}` });
  }
  const parts = clauses.map((c) => `${c.sub ? `${c.sub.replace(/^\./, "")} ` : ""}${c.text.replace(/^has the /, "").replace(/; (?!remove).*$/, "")}`);
  return integrityError(`${at} has ${clauses.length} mistakes: ${parts.join("; ")}; fix them in pack.yaml.`, { field: at });
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
