// The one validation path both adapters use: raw params in, typed params out,
// or a usage error naming the offending field (CLI exit 2 / MCP -32602).
import { resolve } from "node:path";
import { physicalPath, within } from "../core/fs/confine.ts";
import * as v from "valibot";
import { usageError } from "../core/base/errors.ts";
import { firstIssue } from "../core/base/issues.ts";
import type { ParamsSchema, VerbContext, VerbDef } from "./types.ts";

export type Surface = "cli" | "mcp";

/** How a param is named to the user: `--no-clone`-style flag on the CLI, the snake_case key over MCP. */
export function fieldLabel(name: string, surface: Surface): string {
  return surface === "cli" ? `--${name.replaceAll("_", "-")}` : `'${name}'`;
}

/** Param keys a surface may pass: MCP never sees the CLI-only ones. */
export function allowedKeys(verb: VerbDef, surface: Surface): string[] {
  const keys = Object.keys(verb.params.entries);
  return surface === "mcp" ? keys.filter((k) => !verb.cliOnly?.includes(k)) : keys;
}

export function parseParams<P extends ParamsSchema>(
  verb: VerbDef<P>,
  input: unknown,
  surface: Surface,
): v.InferOutput<P> {
  const raw = input ?? {};
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw usageError(`Arguments for '${verb.name}' must be an object.`, { field: null });
  }
  const allowed = new Set(allowedKeys(verb, surface));
  for (const key of Object.keys(raw)) {
    if (!allowed.has(key)) {
      const hint = surface === "mcp" && verb.cliOnly?.includes(key) ? " (it is available on the CLI only)" : "";
      throw usageError(`Unknown argument ${fieldLabel(key, surface)} for '${verb.name}'${hint}; see its schema.`, {
        field: key,
      });
    }
  }
  const parsed = v.safeParse(verb.params, raw);
  if (parsed.success) return parsed.output;
  const { field: key, message } = firstIssue(parsed.issues);
  const top = key.split(".")[0] ?? "";
  const label = top ? fieldLabel(top, surface) + key.slice(top.length) : "arguments";
  throw usageError(`Invalid ${label} for '${verb.name}': ${message}.`, { field: key || null });
}

/** Over MCP, file arguments must stay inside the workspace (agent safety), also after following symlinks. */
export function confineFileParams(verb: VerbDef, params: Record<string, unknown>, ctx: VerbContext): void {
  if (ctx.surface !== "mcp" || !verb.fileParams) return;
  const root = ctx.workspace().root;
  const realRoot = physicalPath(root, true);
  for (const key of verb.fileParams) {
    const value = params[key];
    if (typeof value !== "string") continue;
    if (!within(realRoot, physicalPath(resolve(root, value), true))) {
      throw usageError(`Argument '${key}' (${value}) resolves outside the workspace ${root}; pass a path inside it.`, {
        field: key,
      });
    }
  }
}
