// The verb table contract. Each verb is defined once: a params schema, a result
// schema and one function. The CLI (src/cli) and the MCP server (src/mcp) are
// thin adapters that read this table; nothing verb-specific lives in them.
import type { GenericSchema, InferOutput, ObjectEntries, StrictObjectSchema } from "valibot";
import type { CallContext, Progress } from "../core/locks/call.ts";
import type { GrexError } from "../core/base/errors.ts";

export type { Progress };

export interface VerbContext extends CallContext {
  /** Directory the command runs from (CLI: process cwd; MCP: the server's workspace root). */
  cwd: string;
  /** `--manifest` given at launch, if any. */
  manifest: string | undefined;
  /** Which adapter is calling: MCP calls may not escape the workspace. */
  surface: "cli" | "mcp";
  /**
   * Live output for a person at a terminal (pretty CLI mode only; undefined
   * with --json/--plain, when stdout is not a TTY, and over MCP). A verb that
   * streams through it leaves that content out of its rendering.
   */
  live: ((text: string) => void) | undefined;
  /**
   * Human output as it happens (the CLI without --json, terminal or not;
   * undefined over MCP): a verb hands it lines rendered in the caller's style
   * as work completes, and leaves them out of its final rendering
   * (RenderStyle.rowsStreamed).
   */
  rows?: ((render: (style: RenderStyle) => string) => void) | undefined;
}

export interface RenderStyle {
  /** No colour, no Unicode. */
  plain: boolean;
  /** The verb's output already went out live (see VerbContext.live). */
  streamed: boolean;
  /** Rows went out through VerbContext.rows as they completed; render the rest only. */
  rowsStreamed?: boolean;
  /** ANSI colour allowed: a terminal, no --plain/--json, NO_COLOR unset. */
  color?: boolean;
  /** For naming paths the way people read them: `~/…` under home, relative under cwd. */
  home?: string;
  cwd?: string;
}

export interface CliFlag {
  /** cac flag syntax, e.g. `--type <type>` or `--no-clone`. */
  flag: string;
  description: string;
  /** Repeatable flag collected into an array. */
  repeatable?: boolean;
  /** The flag's value is a number (cac would otherwise hand over a string). */
  number?: boolean;
}

export interface CliSpec {
  /** Positional part of the usage line, e.g. `<url> [path]` or `[...ids]`. */
  args: string;
  /** Param names the positionals fill, in order; a trailing `...name` takes the rest. */
  positionals: string[];
  flags: CliFlag[];
}

/**
 * What a verb may do to shared state, declared as data and enforced by
 * `invoke` (src/verbs/invoke.ts) for every surface.
 * - `workspace`: the workspace lock, taken before the verb runs and released
 *   after. `exclusive` for a mutation pass (sync, update, add, rm), `shared`
 *   for verbs that change setup or the manifest and may run beside each other
 *   but not beside a mutation pass, `none` for readers. Both modes fail fast
 *   (exit 5, MCP -32003) when they cannot be had. Verb code never takes it
 *   again; the one verb that takes it itself is `init` (there may be no
 *   workspace to lock before it runs; see init.ts).
 * - `packs`: `each` — the verb runs its work on each pack under that pack's
 *   lock (core/locks withPackLock), after the workspace lock.
 * - `writes`: whether the verb may change files (workspace, packs, HOME).
 */
export interface VerbEffects {
  workspace: "none" | "shared" | "exclusive";
  packs: "none" | "each";
  writes: boolean;
}

export const READS_ONLY: VerbEffects = { workspace: "none", packs: "none", writes: false };
/** sync, update, add, rm: one mutation pass per workspace, pack by pack. */
export const MUTATION_PASS: VerbEffects = { workspace: "exclusive", packs: "each", writes: true };

/** These effects, except that a dry run only reads (it takes no lock and writes nothing). */
export const unlessDryRun =
  (effects: VerbEffects) =>
  (params: { dry_run: boolean }): VerbEffects =>
    params.dry_run ? READS_ONLY : effects;

// The generic bound for a verb's params: a strict object schema.
export type ParamsSchema = StrictObjectSchema<ObjectEntries, undefined>;

export interface VerbDef<P extends ParamsSchema = ParamsSchema, R extends object = object> {
  name: string;
  /** One line; also the MCP tool description. */
  description: string;
  params: P;
  result: GenericSchema<R>;
  readOnly: boolean;
  destructive: boolean;
  /** False for verbs that are not MCP tools (`serve`, `mcp`). */
  mcp: boolean;
  /** The verb owns stdout while it runs (`serve`): the CLI prints no result document. */
  ownsStdout?: boolean;
  /** Params that exist on the CLI only (agent safety: `exec.shell`, `doctor.fix`). */
  cliOnly?: readonly string[];
  /** Params that name files: over MCP they must resolve inside the workspace. */
  fileParams?: readonly string[];
  cli: CliSpec;
  /** 1–3 command lines shown under "Examples" in `grex <verb> --help`. */
  examples?: readonly string[];
  /** Locks and writes, as data chosen by the params (`--dry-run` or `--fix` change them). */
  effects(params: InferOutput<P>): VerbEffects;
  run(ctx: VerbContext, params: InferOutput<P>, signal: AbortSignal, progress: Progress): Promise<R>;
  /** Human rendering for TTY/plain output; without it the result is shown as indented JSON. */
  render?(result: R, params: InferOutput<P>, style: RenderStyle): string;
  /** A completed run that still failed (e.g. a pack failed in sync): the error to report beside the result. */
  failure?(result: R, params: InferOutput<P>): GrexError | undefined;
}

/** Helper that keeps each verb's param/result types inferred from its schemas. */
export function defineVerb<P extends ParamsSchema, R extends object>(def: VerbDef<P, R>): VerbDef<P, R> {
  return def;
}
