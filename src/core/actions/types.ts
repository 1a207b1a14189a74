// The action contract (SPEC §5). Each action kind is one module exporting an
// ActionDef (valibot args schema + apply + undo); ./executor.ts runs lists of
// them with dry-run, rollback and teardown; ./index.ts is the registry.
//
// Pack state (ctx.state)
// ----------------------
// Teardown may run in a later process than install, so whatever an action
// must remember to undo exactly what it did lives in `state`: one
// JSON-serialisable record per pack. The executor mutates it in place (never
// in a dry run); the caller loads it before and persists it after each run, at
// `<ws>/.grex/.state/packs/<id>.json` (an empty record means: delete the file).
// Keys are `<action>:<resolved target>`:
//   mkdir:<abs path>     → string[]  directories grex created, deepest first
//   symlink:<abs dst>    → { target, backup: string | null }
//   rmdir:<abs path>     → { backup: string }   where backup: true moved it
//   env:<scope>:<NAME>   → { line, files: { <abs file>: { created, addedEol, previous } } }
//   expect:<where>       → what the action at <where> left behind, for the
//                          setup-drift check (see ./drift.ts)
// Losing the file is safe: undo then falls back to what it can see on disk
// (a link pointing at our src, a block holding our line), and keeps anything
// it cannot prove grex made.
import type * as v from "valibot";
import type { Confinement } from "../fs/confine.ts";
import type { OsName } from "../base/os.ts";

export type StepResult =
  | "performed_change"
  | "would_perform_change"
  | "already_satisfied"
  | "noop"
  | "skipped"
  | "failed";

/**
 * One reported step. Nested actions (inside `when`) carry the top-level idx of
 * their `when` and `details.nested` (e.g. "when.actions[0]"); rollback steps
 * carry the rolled-back action's name and idx and `details.rollback`; teardown
 * steps carry `details.teardown: true`.
 */
export interface Step {
  pack: string;
  action: string;
  idx: number;
  result: StepResult;
  details: Record<string, unknown>;
}

/** One pack.yaml action item: an object with exactly one key, the action name. */
export type ActionItem = Record<string, unknown>;

export type PackState = Record<string, unknown>;

export interface ActionContext {
  packId: string;
  packDir: string;
  dryRun: boolean;
  /** Environment for variable expansion and child processes; `env` scope session updates it. */
  env: Record<string, string | undefined>;
  os: OsName;
  signal: AbortSignal;
  now(): Date;
  state: PackState;
  /** Where this action sits, for messages: `actions[2].symlink`. */
  where: string;
  /** What this pack may touch (symlink dst, mkdir/rmdir path, backups, exec cwd). */
  confine: Confinement;
  /** Paths a dry run would have created so far, so later steps can plan against them. */
  planned: Set<string>;
  /** The file `env` scope machine edits (/etc/environment). */
  machineEnvFile: string;
  /**
   * The environment `env` scope session changes: the calling verb's own copy
   * (never process.env), so one call's session values are invisible to every
   * other call, concurrent MCP calls included.
   */
  processEnv: Record<string, string | undefined>;
  /** Values session scope replaced in this run, per pack and variable (what undo restores). */
  sessionSaved: Map<string, string | undefined>;
  /** Runs nested actions (used by `when`). */
  runNested(items: readonly ActionItem[], where: string): Promise<NestedRun>;
  /** Undoes nested actions in reverse (used by `when` on teardown). */
  undoNested(items: readonly ActionItem[], where: string): Promise<NestedRun>;
}

export interface NestedRun {
  steps: Step[];
  failed: { reason: string; stderr: string } | null;
  skipRest: boolean;
  /** Rollbacks of what this nested run applied, in the order applied. */
  rollbacks: Rollback[];
}

export interface Rollback {
  action: string;
  idx: number;
  /** Undo the change; returns what was undone, as a short phrase. */
  run(): Promise<string>;
}

export interface ActionOutcome {
  result: StepResult;
  details: Record<string, unknown>;
  /** Undo this change (a later action of the same run failed); returns what was undone. */
  rollback?: () => Promise<string>;
  /** A `require` with on_fail: skip — stop this pack here, reported skipped. */
  skipRest?: boolean;
  /** Steps of nested actions (`when`). */
  nested?: Step[];
  /** Rollbacks of nested actions (`when`), run before this outcome's own. */
  nestedRollbacks?: Rollback[];
  /** Failure text (a clause: what; what to do) and the stderr tail for the action_halted event. */
  failure?: { reason: string; stderr: string };
}

export interface ActionDef<A = unknown> {
  name: string;
  schema: v.GenericSchema<unknown, A>;
  apply(args: A, ctx: ActionContext): Promise<ActionOutcome>;
  /** Teardown without an explicit list: undo what apply did. Idempotent: a second undo is a no-op. */
  undo(args: A, ctx: ActionContext): Promise<ActionOutcome>;
  /** After a successful apply: what must still hold later (resolved paths), or null when nothing can be checked; its check is in checks.ts. */
  expect?(args: A, ctx: ActionContext): Expectation | null;
}

/** What an applied action left behind: `path` names it for people; the rest is the action's own. */
export interface Expectation {
  path: string;
  [key: string]: unknown;
}
