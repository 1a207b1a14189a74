// The action registry: name → definition, and parsing of one pack.yaml action item.
import * as v from "valibot";
import { integrityError, pluginError } from "../errors.ts";
import { envAction } from "./env.ts";
import { execAction } from "./exec.ts";
import { mkdirAction } from "./mkdir.ts";
import { requireAction } from "./require.ts";
import { rmdirAction } from "./rmdir.ts";
import { symlinkAction } from "./symlink.ts";
import type { ActionDef } from "./types.ts";
import { whenAction } from "./when.ts";

const REGISTRY = new Map<string, ActionDef<unknown>>(
  [symlinkAction, envAction, mkdirAction, rmdirAction, requireAction, whenAction, execAction].map((d) => [d.name, d as ActionDef<unknown>]),
);

export interface ParsedAction {
  name: string;
  def: ActionDef<unknown>;
  args: unknown;
}

/** Validate one `{<name>: args}` item; errors name the field path. */
export function parseActionItem(item: Record<string, unknown>, where: string): ParsedAction {
  const keys = Object.keys(item);
  const name = keys[0];
  if (keys.length !== 1 || name === undefined) throw integrityError(`${where} must have exactly one action key; split it into one item per action.`);
  const def = REGISTRY.get(name);
  if (!def) throw pluginError(`${where} uses unknown action '${name}'; use ${[...REGISTRY.keys()].join(", ")}.`);
  const parsed = v.safeParse(def.schema, item[name] ?? {});
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const path = issue.path?.map((p) => String(p.key)).join(".");
    throw integrityError(`${where}.${name}${path ? `.${path}` : ""} ${issue.message.replace(/\.$/, "")}; fix it in pack.yaml.`);
  }
  if (name === "when") {
    const nested = (parsed.output as { actions: Record<string, unknown>[] }).actions;
    nested.forEach((n, i) => parseActionItem(n, `${where}.when.actions[${i}]`));
  }
  return { name, def, args: parsed.output };
}

/** Items of one action kind, including those nested in `when` (kept inside their `when`). */
export function collectNamedActions(items: readonly Record<string, unknown>[], name: string): Array<{ item: Record<string, unknown>; idx: number }> {
  const out: Array<{ item: Record<string, unknown>; idx: number }> = [];
  items.forEach((item, idx) => {
    if (name in item) out.push({ item, idx });
    else if ("when" in item) {
      const w = item.when as { actions?: Record<string, unknown>[] } | undefined;
      const inner = (w?.actions ?? []).filter((a) => collectNamedActions([a], name).length > 0);
      if (inner.length > 0) out.push({ item: { when: { ...w, actions: inner } }, idx });
    }
  });
  return out;
}
