// The one invoke path every surface uses (the CLI adapter, the MCP server, and
// anything later such as a gateway): raw params in → validated params → the
// locks the verb declares, in the documented order → run → the completed
// result or the failure mapped onto the error table → locks released.
import type { InferOutput } from "valibot";
import { CancelledError, GrexError } from "../core/base/errors.ts";
import { withWorkspaceLock } from "../core/locks/locks.ts";
import { objectCacheSetting, withObjectCache } from "../core/git/object-cache-setting.ts";
import { findWorkspace } from "../core/base/workspace.ts";
import { failureDocument } from "./serialize.ts";
import type { ParamsSchema, Progress, RenderStyle, VerbContext, VerbDef } from "./types.ts";
import { confineFileParams, parseParams, type Surface } from "./validate.ts";

export interface Invocation {
  surface: Surface;
  ctx: VerbContext;
  signal: AbortSignal;
  progress: Progress;
}

/**
 * How a call ended, other than by cancellation or an internal error (those
 * are thrown). `document` is what `--json` prints and MCP returns as
 * `structuredContent`; `render` is the human text when there is a result.
 */
export type Outcome =
  | { ok: true; document: object; render(style: RenderStyle): string }
  | { ok: false; error: GrexError; document: object; render: ((style: RenderStyle) => string) | undefined };

/** The call's workspace root, or null when it has none (`init`, `--version`). */
function workspaceRootOrNull(ctx: VerbContext): string | null {
  try {
    return findWorkspace(ctx.cwd, ctx.manifest).root; // not ctx.workspace(): `init` must not find an enclosing workspace cached for it
  } catch {
    return null;
  }
}

export async function invoke<P extends ParamsSchema, R extends object>(
  verb: VerbDef<P, R>,
  raw: unknown,
  call: Invocation,
): Promise<Outcome> {
  const { surface, ctx, signal, progress } = call;
  const failed = (error: GrexError): Outcome => ({ ok: false, error, document: failureDocument(verb.name, error, surface), render: undefined });
  let params: InferOutput<P>;
  let result: R;
  try {
    params = parseParams(verb, raw, surface);
    confineFileParams(verb, params, ctx);
    const effects = verb.effects(params);
    // The shared object cache this call's clones and fetches go through (GREX_OBJECT_CACHE or the workspace's setting).
    const inCache = (root: string | null) => () => withObjectCache(objectCacheSetting(root, ctx.env), () => verb.run(ctx, params, signal, progress));
    if (effects.workspace === "none") result = await inCache(workspaceRootOrNull(ctx))();
    else {
      const ws = ctx.workspace();
      result = await withWorkspaceLock(ws, verb.name, effects.workspace, inCache(ws.root));
    }
  } catch (err) {
    if (signal.aborted || (err instanceof GrexError && err.kind === "cancelled")) throw err;
    if (err instanceof GrexError) return failed(err);
    throw err;
  }
  if (signal.aborted) throw new CancelledError();
  const render = (style: RenderStyle) => (verb.render ? verb.render(result, params, style) : JSON.stringify(result, null, 2));
  const error = verb.failure?.(result, params);
  if (error) return { ok: false, error, document: failureDocument(verb.name, error, surface, result), render };
  return { ok: true, document: result, render };
}
