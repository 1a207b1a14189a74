// The valibot schemas of grex.jsonl's events: the contract every outgoing
// event is validated against (eventLine), and that the read side's plain
// checks (checkEvent) are tested against. Kept apart from manifest.ts so that
// reading the manifest does not build them.
import * as v from "valibot";
import { KNOWN_OPS, type KnownOp, SCHEMA_VERSION, TS_RE } from "./manifest-events.ts";
import { controlCharIn, controlCharProblem, PACK_PATH_RE, TAG_RE } from "../base/naming.ts";
import { normaliseCloneFilter } from "../base/clone-filter.ts";

const Str = v.pipe(v.string(), v.minLength(1, "must be a non-empty string"));
const PackPath = v.pipe(v.string(), v.regex(PACK_PATH_RE, "must be a pack path (name segments joined by '/')"));
const envelope = {
  ts: v.pipe(v.string(), v.regex(TS_RE, "must be an RFC 3339 UTC timestamp")),
  id: PackPath,
  schema_version: v.literal(SCHEMA_VERSION),
};
const Ts = v.pipe(v.string(), v.regex(TS_RE, "must be an RFC 3339 UTC timestamp"));
/** The `ts` of the line(s) for the same id this one supersedes (manifest-conflicts.ts). */
const prev = v.optional(v.union([Ts, v.array(Ts)]));
/** Optional on add and update: readers that do not know it ignore it (docs/compat-rust.md). */
const tags = v.optional(v.pipe(v.array(v.pipe(v.string(), v.regex(TAG_RE, "must be a tag (letters, digits, '.', '_', '-')"))), v.maxLength(64)));
/** Optional on add (a shallow clone of that many commits) and update (null: full history again). */
const Depth = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(0x7fffffff));
const Idx = v.pipe(v.number(), v.integer(), v.minValue(0));
/** A url or ref: no control character (git refuses them; a newline would reach a .git/config as a line of its own). */
const noControl = v.check((s: string) => controlCharIn(s) === null, (i) => controlCharProblem("it", String(i.input)) ?? "must not contain a control character");
const Url = v.pipe(Str, noControl);
const Ref = v.nullable(v.pipe(v.string(), noControl));

export const AddEventSchema = v.looseObject({
  op: v.literal("add"),
  ...envelope,
  url: Url,
  path: PackPath,
  type: Str,
  // Missing `ref` reads as null (hand-written lines); grex always writes it.
  ref: v.optional(Ref),
  tags,
  depth: v.optional(Depth),
  // A task workspace's source (`init --from`); an absolute path.
  from: v.optional(v.pipe(Str, noControl)),
  filter: v.optional(v.pipe(v.string(), v.check((f) => normaliseCloneFilter(f) === f, "must be a partial-clone filter grex implements (blob:none, blob:limit=<n>)"))),
  prev,
});
export const UpdateEventSchema = v.looseObject({
  op: v.literal("update"),
  ...envelope,
  url: v.optional(Url),
  type: v.optional(Str),
  ref: v.optional(Ref),
  tags,
  depth: v.optional(v.nullable(Depth)),
  prev,
});
export const RmEventSchema = v.looseObject({ op: v.literal("rm"), ...envelope, prev });
export const SyncEventSchema = v.looseObject({ op: v.literal("sync"), ...envelope });
export const ActionStartedEventSchema = v.looseObject({ op: v.literal("action_started"), ...envelope, action: Str, idx: Idx });
export const ActionCompletedEventSchema = v.looseObject({
  op: v.literal("action_completed"),
  ...envelope,
  action: Str,
  idx: Idx,
  changed: v.boolean(),
});
export const ActionHaltedEventSchema = v.looseObject({
  op: v.literal("action_halted"),
  ...envelope,
  action: Str,
  idx: Idx,
  reason: v.string(),
  stderr: v.string(),
});
export const UnknownEventSchema = v.looseObject({
  op: v.pipe(
    Str,
    v.check((op) => !(KNOWN_OPS as readonly string[]).includes(op), "is a known op"),
  ),
  ...envelope,
});
const EVENT_SCHEMAS: Record<KnownOp, v.GenericSchema> = {
  add: AddEventSchema,
  update: UpdateEventSchema,
  rm: RmEventSchema,
  sync: SyncEventSchema,
  action_started: ActionStartedEventSchema,
  action_completed: ActionCompletedEventSchema,
  action_halted: ActionHaltedEventSchema,
};
export const ManifestEventSchema = v.union([
  v.variant("op", [
    AddEventSchema,
    UpdateEventSchema,
    RmEventSchema,
    SyncEventSchema,
    ActionStartedEventSchema,
    ActionCompletedEventSchema,
    ActionHaltedEventSchema,
  ]),
  UnknownEventSchema,
]);

/** The schema an event with this op must satisfy (ops from a newer grex: the envelope only). */
export function eventSchemaFor(op: string): v.GenericSchema {
  return (KNOWN_OPS as readonly string[]).includes(op) ? EVENT_SCHEMAS[op as KnownOp] : UnknownEventSchema;
}
