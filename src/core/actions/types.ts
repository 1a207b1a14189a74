// The action contract (SPEC §5). Each action kind is one module exporting an
// ActionDef; the executor runs lists of them with dry-run, rollback and teardown.
import type * as v from "valibot";
import type { OsName } from "../os.ts";

export type StepResult =
  | "performed_change"
  | "would_perform_change"
  | "already_satisfied"
  | "noop"
  | "skipped"
  | "failed";

export interface Step {
  pack: string;
  action: string;
  idx: number;
  result: StepResult;
  details: Record<string, unknown>;
}

/**
 * What grex remembers about a pack between runs so teardown can undo exactly
 * what install did (e.g. only directories grex created). Persisted by the
 * caller as JSON under .grex/.state/packs/.
 */
export type PackState = Record<string, unknown>;

export interface ActionContext {
  packId: string;
  packDir: string;
  dryRun: boolean;
  /** Environment for variable expansion and child processes; `session` env actions update it. */
  env: Record<string, string | undefined>;
  os: OsName;
  signal: AbortSignal;
  state: PackState;
  /** Where this action sits, for messages: `actions[2]`. */
  where: string;
  /** Runs nested actions (used by `when`). */
  runNested(items: ReadonlyArray<Record<string, unknown>>, where: string): Promise<NestedRun>;
  /** Undoes nested actions (used by `when` on teardown). */
  undoNested(items: ReadonlyArray<Record<string, unknown>>, where: string): Promise<NestedRun>;
}

export interface NestedRun {
  steps: Step[];
  failed: { reason: string; stderr: string } | null;
  skipRest: boolean;
  rollbacks: Array<() => Promise<string>>;
}

export interface ActionOutcome {
  result: StepResult;
  details: Record<string, unknown>;
  /** Undo this change (install failed later in the same pack); returns what was undone. */
  rollback?: () => Promise<string>;
  /** A `require` with on_fail: skip — stop this pack here, reported skipped. */
  skipRest?: boolean;
  /** Steps of nested actions (`when`). */
  nested?: Step[];
  /** Failure text and the stderr tail for the action_halted event. */
  failure?: { reason: string; stderr: string };
}

export interface ActionDef<A = unknown> {
  name: string;
  schema: v.GenericSchema<unknown, A>;
  apply(args: A, ctx: ActionContext): Promise<ActionOutcome>;
  /** Teardown without an explicit list: undo what apply did (idempotent). */
  undo(args: A, ctx: ActionContext): Promise<ActionOutcome>;
}
