// `.grex/pack.yaml` schema "1" (SPEC §3) as valibot schemas. Every message is
// written here as "<reason>; <what to do>" so the loader can turn the first
// issue into one sentence: "<file>: <field path> <reason>; <what to do>."
import * as v from "valibot";
import { closest } from "../base/closest.ts";
import { GrexError, integrityError, packOpError, pluginError } from "../base/errors.ts";
import { BARE_NAME_RE, controlCharIn, defaultPathFromUrl, isBareName } from "../base/naming.ts";
import { BUILTIN_ACTIONS, isKnownAction, isKnownPackType, knownPackTypes, packTypeChoices } from "../base/registry.ts";
import { checkXGitignore } from "./x-gitignore.ts";
import { describeValue as describe } from "./describe.ts";
import { McpSectionSchema, type McpServerDecl } from "./mcp-servers.ts";

export interface ChildSpec {
  url: string;
  path: string;
  ref: string | null;
}

/** One action item: an object with exactly one key (the action name). Its value is checked by the action module. */
export type ActionItem = Record<string, unknown>;

export interface PackManifest {
  schema_version: "1";
  name: string;
  type: string;
  version: string | null;
  depends_on: string[];
  children: ChildSpec[];
  actions: ActionItem[];
  teardown: ActionItem[] | null;
  /** `x-` prefixed top-level keys, kept for tools that read them. */
  extensions: Record<string, unknown>;
  /** `mcp.servers`, present only when the pack declares some (see mcp-servers.ts). */
  mcp_servers?: McpServerDecl[];
  /** `submodules: true`: sync clones and moves the repository's git submodules too (git/submodules.ts). */
  submodules?: boolean;
}

export const PACK_NAME_RE = /^[a-z][a-z0-9-]*$/;
/** Same rule as a top-level pack id: a bare directory name. */
export const BARE_PATH_RE = BARE_NAME_RE;
export const isBarePath = isBareName;
/** Default child path: the URL's last segment without `.git` (also for `git@host:org/repo.git`). */
export const defaultChildPath = defaultPathFromUrl;

// Issues carrying this `expected` value are "unknown action / pack type" (exit 8), not integrity (exit 3).
const PLUGIN_EXPECTED = "a registered name";
// Issues carrying this one are upstream content git itself would refuse (a control character in a child's url or ref): exit 4.
const UPSTREAM_EXPECTED = "text git accepts";

/** The error of a document's (first) problem: 8 for an unknown action or pack type, 4 for text git refuses, else 3. */
function problemError(kind: Problem["kind"], message: string, data: Record<string, unknown>): GrexError {
  return kind === "plugin" ? pluginError(message, data) : kind === "upstream" ? packOpError(message, data) : integrityError(message, data);
}
const kindOf = (i: Issue): Problem["kind"] => (i.expected === PLUGIN_EXPECTED ? "plugin" : i.expected === UPSTREAM_EXPECTED ? "upstream" : undefined);

/** A child's url or ref: a control character in it would reach the child's .git/config as a line of its own. */
const gitText = v.rawCheck<string>(({ dataset, addIssue }) => {
  if (!dataset.typed) return;
  const c = controlCharIn(dataset.value);
  if (c !== null) addIssue({ expected: UPSTREAM_EXPECTED, message: `contains ${c}, which git refuses in URLs, refs and paths; grex will not clone it` });
});

const BASE_KEYS = ["schema_version", "name", "type", "version", "depends_on", "children", "actions", "teardown", "mcp", "submodules"];
const OVERRIDE_KEYS = [...BASE_KEYS, "actions_replace"];

type Issue = v.BaseIssue<unknown>;
type Message = (issue: Issue) => string;

const isMapping = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === "object" && !Array.isArray(x);

const mustBe =
  (what: string, fix: string): Message =>
  (issue) =>
    `must be ${what} (got ${describe(issue.input)}); ${fix}`;

/** The key an object-schema issue is about (missing or unknown key), if any. */
function issueKey(issue: Issue): string | undefined {
  const last = issue.path?.at(-1);
  return last && last.type === "object" && last.origin === "key" ? String(last.key) : undefined;
}

/** Message for a mapping schema: wrong type, missing key or unknown key. */
const mappingMsg =
  (what: string, fix: string, missing: Record<string, string> = {}, allowed = ""): Message =>
  (issue) => {
    const key = issueKey(issue);
    if (key === undefined) return mustBe(what, fix)(issue);
    if (issue.expected === "never") return `is not a known field; remove it${allowed ? ` (allowed: ${allowed})` : ""}`;
    return `is missing; ${missing[key] ?? "add it"}`;
  };

const keyPath = (input: Record<string, unknown>, key: string) =>
  [{ type: "object" as const, origin: "key" as const, input, key, value: input[key] }] as [v.ObjectPathItem];

const mapping = (msg: Message) => v.custom<Record<string, unknown>>(isMapping, msg);

const actionItem = v.pipe(
  mapping(mustBe("a mapping with one action key", "write it as '- mkdir: { path: ... }'")),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const item = dataset.value;
    const keys = Object.keys(item);
    if (keys.length !== 1) {
      addIssue({
        message:
          keys.length === 0
            ? "has no action key; write one action per item, such as '- mkdir: { path: ... }'"
            : `has ${keys.length} keys (${keys.join(", ")}) but an action item takes exactly one; split it into one list item per action`,
      });
      return;
    }
    const name = keys[0] as string;
    if (!isKnownAction(name)) {
      const hint = closest(name, BUILTIN_ACTIONS, 2);
      addIssue({
        expected: PLUGIN_EXPECTED,
        path: keyPath(item, name),
        message: `is not a known action${hint ? ` (did you mean ${hint}?)` : ""}; use one of ${BUILTIN_ACTIONS.join(", ")}, or install the plugin that provides it`,
      });
    }
  }),
);

const actionList = v.nullish(v.array(actionItem, mustBe("a list of actions", "write each action as a '- name: {...}' list item")));

const childPath = v.pipe(
  v.string(mustBe("a string", "give a directory name such as themes")),
  v.check(isBarePath, (issue) => `'${String(issue.input)}' is not a bare directory name; use letters, digits, '.', '_' or '-' with no '/' or '\\' (and not '.' or '..')`),
);

const child = v.pipe(
  mapping(mustBe("a mapping with url (and optional path, ref)", "write it as '- url: https://...'")),
  v.strictObject(
    {
      url: v.pipe(
        v.string(mustBe("a string", "give the child's git URL")),
        v.nonEmpty("is empty; give the child's git URL"),
        gitText,
      ),
      path: v.optional(childPath),
      ref: v.nullish(v.pipe(v.string(mustBe("a string", "quote it (a branch, tag or commit sha)")), gitText)),
    },
    mappingMsg("a mapping", "write it as '- url: https://...'", { url: "give the child's git URL" }, "url, path, ref"),
  ),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed || dataset.value.path !== undefined) return;
    const def = defaultChildPath(dataset.value.url);
    if (!isBarePath(def)) {
      addIssue({
        path: keyPath(dataset.value, "url"),
        message: `does not end in a usable directory name (would be '${def}'); add path: <name> to this child`,
      });
    }
  }),
  v.transform((c): ChildSpec => ({ url: c.url, path: c.path ?? defaultChildPath(c.url), ref: c.ref ?? null })),
);

const packType = v.pipe(
  v.string(mustBe("a string", `use ${packTypeChoices()}`)),
  v.rawCheck(({ dataset, addIssue }) => {
    if (dataset.typed && !isKnownPackType(dataset.value)) {
      const hint = closest(dataset.value, knownPackTypes(), 3);
      addIssue({
        expected: PLUGIN_EXPECTED,
        message: `'${dataset.value}' is not a known pack type${hint ? ` (did you mean ${hint}?)` : ""}; use one of ${knownPackTypes().join(", ")}, or install the plugin that provides it`,
      });
    }
  }),
);

const entries = {
  schema_version: v.literal("1", (issue) =>
    typeof issue.input === "string"
      ? `is "${issue.input}" but this grex reads schema "1" only; write schema_version: "1" or upgrade grex`
      : `must be the string "1" (got ${describe(issue.input)}); write schema_version: "1" with the quotes`,
  ),
  name: v.pipe(
    v.string(mustBe("a string", "use a name such as my-pack")),
    v.regex(PACK_NAME_RE, (issue) => `'${String(issue.input)}' is not a valid pack name; use lowercase letters, digits and '-', starting with a letter (such as my-pack)`),
  ),
  type: packType,
  // A number is read as its text, as the Rust grex does (version: 1.5 is "1.5").
  version: v.nullish(
    v.pipe(v.union([v.string(), v.number()], mustBe("a string or a number", 'write it such as version: "1.0"')), v.transform(String)),
  ),
  depends_on: v.nullish(
    v.array(
      v.pipe(
        v.string(mustBe("a string", "give a pack name or a git URL")),
        v.regex(/^\S+$/, "must be a pack name or a git URL without spaces; fix the entry"),
      ),
      mustBe("a list", "write each pack name or URL as a list item"),
    ),
  ),
  children: v.nullish(v.array(child, mustBe("a list", "write each child as a '- url: ...' list item"))),
  actions: actionList,
  teardown: actionList,
  mcp: v.nullish(McpSectionSchema),
  submodules: v.nullish(v.boolean(mustBe("true or false", "write submodules: true to check out the repository's git submodules"))),
};

const MISSING_HINTS: Record<string, string> = {
  schema_version: 'add schema_version: "1"',
  name: "add a name such as name: my-pack",
  type: `add type: ${packTypeChoices()}`,
};

/** Reject top-level keys that are neither schema fields nor `x-` extensions. */
const topKeys = <T extends Record<string, unknown>>(allowed: string[], override: boolean) =>
  v.rawCheck<T>(({ dataset, addIssue }) => {
    // Runs after the fields' own checks, whatever they found, so every mistake is reported at once.
    if (!isMapping(dataset.value)) return;
    for (const key of Object.keys(dataset.value)) {
      if (key.startsWith("x-") || allowed.includes(key)) continue;
      const hint = closest(key, allowed, 2);
      addIssue({
        path: keyPath(dataset.value, key),
        message:
          key === "actions_replace" && !override
            ? "is allowed only in .grex/targets/<os>.yaml override files; remove it from pack.yaml"
            : `is not a pack.yaml field${hint ? ` (did you mean ${hint}?)` : ""}; remove it, or prefix it with x- to keep your own data`,
      });
    }
  });

const docMsg = mustBe("a mapping of pack.yaml fields", "write key: value pairs such as name: my-pack");

const packObject = v.looseObject(entries, mappingMsg("a mapping", "write key: value pairs", MISSING_HINTS));

/** Schema of a full `.grex/pack.yaml`. */
export const PackYamlSchema = v.pipe(mapping(docMsg), packObject, topKeys<v.InferOutput<typeof packObject>>(BASE_KEYS, false));

/** Schema of a platform override `.grex/targets/<os>.yaml`: every field optional, plus `actions_replace`. */
const overrideObject = v.looseObject(
  {
    ...v.partial(v.object(entries)).entries,
    actions_replace: v.optional(v.boolean(mustBe("true or false", "write actions_replace: true"))),
  },
  mappingMsg("a mapping", "write key: value pairs"),
);
export const PackOverrideSchema = v.pipe(mapping(docMsg), overrideObject, topKeys<v.InferOutput<typeof overrideObject>>(OVERRIDE_KEYS, true));

export type PackOverride = Partial<Omit<PackManifest, "schema_version" | "extensions">> & {
  actions_replace: boolean;
  extensions: Record<string, unknown>;
  /** Keys present in the override file (so an explicit `version: ~` still replaces). */
  present: Set<string>;
};

/** `actions[2].symlnk`, `children[0].path`, or "" for the document itself. */
export function fieldPath(path: readonly v.IssuePathItem[] | undefined): string {
  let out = "";
  for (const item of path ?? []) {
    const key = item.key;
    if (typeof key === "number") out += `[${key}]`;
    else if (typeof key === "string" && /^[A-Za-z_][\w-]*$/.test(key)) out += out ? `.${key}` : key;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

/** Turn the first valibot issue into a one-sentence GrexError naming file and field. */
export function issueError(issue: Issue, file: string): GrexError {
  const field = fieldPath(issue.path);
  const message = `${file}${field ? `: ${field}` : ""} ${issue.message.replace(/\s*\n\s*/g, " ")}.`;
  return problemError(kindOf(issue), message, { file, field });
}

/** How many problems one error lists at most: enough to fix a file in one pass, short enough to read. */
export const MAX_REPORTED_ISSUES = 20;

/**
 * Every problem of a document in one error, in the order they appear in it:
 * one problem reads as before ("<file>: <field> <reason>."); several read
 * "<file> has N problems: <field> <reason>; …". The exit code is the first
 * problem's (3, or 8 for an unknown action or pack type). `data.problems`
 * lists each `{ field, reason }`.
 */
export function issuesError(issues: readonly Issue[], file: string, doc: unknown): GrexError {
  const sorted = issues;
  const first = sorted[0] as Issue;
  if (sorted.length === 1) return issueError(first, file);
  return groupedError(problemsOf(sorted, doc), file);
}

function problemsOf(issues: readonly Issue[], doc: unknown): Problem[] {
  const order = isMapping(doc) ? Object.keys(doc) : [];
  const rank = (i: Issue) => {
    const top = i.path?.[0]?.key;
    return typeof top === "string" ? order.indexOf(top) : -1;
  };
  return issues
    .map((issue, n) => ({ issue, n }))
    .sort((a, b) => rank(a.issue) - rank(b.issue) || a.n - b.n)
    .map(({ issue: i }) => ({ field: fieldPath(i.path), reason: i.message.replace(/\s*\n\s*/g, " "), plugin: i.expected === PLUGIN_EXPECTED, kind: kindOf(i) }));
}

function oneProblem(p: Problem, file: string): GrexError {
  const message = `${file}${p.field ? `: ${p.field}` : ""} ${p.reason.replace(/[.\s]+$/, "")}.`;
  return problemError(p.kind ?? (p.plugin ? "plugin" : undefined), message, { file, field: p.field });
}

/** Several problems of one file as one error (see issuesError). */
export function groupedError(problems: readonly Problem[], file: string): GrexError {
  const shown = problems.slice(0, MAX_REPORTED_ISSUES);
  const more = problems.length - shown.length;
  const parts = shown.map((p, i) => `(${i + 1}) ${p.field ? `${p.field} ` : ""}${p.reason.replace(/[.\s]+$/, "")}`);
  const message = `${file} has ${problems.length} problems: ${parts.join("; ")}${more > 0 ? `; and ${more} more` : ""}.`;
  const first = problems[0];
  const data = { file, field: first?.field ?? "", problems: shown.map(({ field, reason }) => ({ field, reason })) };
  return problemError(first?.kind ?? (first?.plugin ? "plugin" : undefined), message, data);
}

function extensionsOf(doc: Record<string, unknown>): Record<string, unknown> {
  const ext: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(doc)) if (k.startsWith("x-")) ext[k] = val;
  return ext;
}

/** One problem of a document: where, why, and whether it is an unknown action or pack type (exit 8). */
export interface Problem {
  field: string;
  reason: string;
  plugin: boolean;
  /** "upstream": text git refuses (exit 4); "plugin" as `plugin`; absent: integrity (exit 3). */
  kind?: "plugin" | "upstream";
}

/**
 * Extra checks a caller adds to validation (the sync engine: every action's
 * arguments), so a document's problems all come in one error. Kept out of
 * this module: a report that reads pack.yaml loads no action schema.
 */
export type MoreChecks = (doc: Record<string, unknown>) => Problem[];

/** Validate a parsed pack.yaml document. `file` only appears in messages. */
export function validatePack(doc: unknown, file: string, more?: MoreChecks): PackManifest {
  const r = v.safeParse(PackYamlSchema, doc);
  const extra = more && isMapping(doc) ? more(doc) : [];
  if (!r.success) {
    if (extra.length === 0) throw issuesError(r.issues, file, doc);
    throw groupedError([...problemsOf(r.issues, doc), ...extra], file);
  }
  if (extra.length > 0) throw extra.length === 1 ? oneProblem(extra[0] as Problem, file) : groupedError(extra, file);
  const o = r.output;
  checkXGitignore(o, file);
  return {
    schema_version: "1",
    name: o.name,
    type: o.type,
    version: o.version ?? null,
    depends_on: o.depends_on ?? [],
    children: o.children ?? [],
    actions: o.actions ?? [],
    teardown: o.teardown ?? null,
    extensions: extensionsOf(o),
    ...(o.mcp && o.mcp.length > 0 ? { mcp_servers: o.mcp } : {}),
    ...(o.submodules ? { submodules: true } : {}),
  };
}

/** Validate a parsed platform override document (a partial pack.yaml). */
export function validateOverride(doc: unknown, file: string, more?: MoreChecks): PackOverride {
  const r = v.safeParse(PackOverrideSchema, doc);
  const extra = more && isMapping(doc) ? more(doc) : [];
  if (!r.success) {
    if (extra.length === 0) throw issuesError(r.issues, file, doc);
    throw groupedError([...problemsOf(r.issues, doc), ...extra], file);
  }
  if (extra.length > 0) throw extra.length === 1 ? oneProblem(extra[0] as Problem, file) : groupedError(extra, file);
  const o = r.output;
  checkXGitignore(o, file);
  const out: PackOverride = {
    actions_replace: o.actions_replace ?? false,
    extensions: extensionsOf(o),
    present: new Set(Object.keys(o).filter((k) => BASE_KEYS.includes(k))),
  };
  if (o.name !== undefined) out.name = o.name;
  if (o.type !== undefined) out.type = o.type;
  if (o.version !== undefined) out.version = o.version;
  if (o.depends_on) out.depends_on = o.depends_on;
  if (o.children) out.children = o.children;
  if (o.actions) out.actions = o.actions;
  if (o.teardown) out.teardown = o.teardown;
  if (o.mcp && o.mcp.length > 0) out.mcp_servers = o.mcp;
  return out;
}
