// `.grex/pack.yaml` schema "1" (SPEC §3), checked by hand so every failure
// names the exact field path in one sentence.
import { GrexError, integrityError, pluginError } from "../errors.ts";
import { isKnownAction, isKnownPackType } from "../registry.ts";

export interface ChildSpec {
  url: string;
  path: string;
  ref: string | null;
}

/** One action item: an object with exactly one key (the action name). */
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
  /** `x-` prefixed keys, kept for tools that read them. */
  extensions: Record<string, unknown>;
}

const NAME_RE = /^[a-z][a-z0-9-]*$/;
const CHILD_PATH_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const TOP_KEYS = new Set(["schema_version", "name", "type", "version", "depends_on", "children", "actions", "teardown"]);

export const defaultChildPath = (url: string): string =>
  (url.replace(/[/\\]+$/, "").split(/[/\\:]/).pop() ?? "").replace(/\.git$/, "");

export class PackChecker {
  constructor(private readonly file: string) {}

  fail(field: string, reason: string, fix: string): GrexError {
    return integrityError(`${this.file}: ${field} ${reason}; ${fix}.`, { file: this.file, field });
  }

  string(value: unknown, field: string): string {
    if (typeof value !== "string") throw this.fail(field, `must be a string (got ${describe(value)})`, "quote the value");
    return value;
  }

  list(value: unknown, field: string): unknown[] {
    if (!Array.isArray(value)) throw this.fail(field, `must be a list (got ${describe(value)})`, "write it as a YAML list");
    return value;
  }

  mapping(value: unknown, field: string): Record<string, unknown> {
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      throw this.fail(field, `must be a mapping (got ${describe(value)})`, "write it as key: value pairs");
    }
    return value as Record<string, unknown>;
  }

  actions(value: unknown, field: string): ActionItem[] {
    return this.list(value, field).map((item, i) => {
      const where = `${field}[${i}]`;
      const obj = this.mapping(item, where);
      const keys = Object.keys(obj);
      if (keys.length !== 1) {
        throw this.fail(where, `must have exactly one action key (found ${keys.length === 0 ? "none" : keys.join(", ")})`, "split it into one item per action");
      }
      const name = keys[0] as string;
      if (!isKnownAction(name)) {
        throw pluginError(
          `${this.file}: ${where} uses unknown action '${name}'; use symlink, env, mkdir, rmdir, require, when or exec (or install the plugin that provides it).`,
          { file: this.file, field: `${where}.${name}` },
        );
      }
      return obj;
    });
  }

  children(value: unknown, field: string): ChildSpec[] {
    return this.list(value, field).map((item, i) => {
      const where = `${field}[${i}]`;
      const obj = this.mapping(item, where);
      for (const k of Object.keys(obj)) {
        if (k !== "url" && k !== "path" && k !== "ref") throw this.fail(`${where}.${k}`, "is not a known child field", "use url, path or ref");
      }
      const url = this.string(obj.url, `${where}.url`);
      if (url === "") throw this.fail(`${where}.url`, "is empty", "give the child's git URL");
      const path = obj.path === undefined ? defaultChildPath(url) : this.string(obj.path, `${where}.path`);
      if (!CHILD_PATH_RE.test(path) || path === "." || path === "..") {
        throw this.fail(`${where}.path`, `'${path}' is not a bare directory name`, "use letters, digits, '.', '_' or '-' with no '/'");
      }
      const ref = obj.ref === undefined || obj.ref === null ? null : String(obj.ref);
      return { url, path, ref };
    });
  }
}

function describe(v: unknown): string {
  if (v === null || v === undefined) return "nothing";
  if (Array.isArray(v)) return "a list";
  return typeof v === "object" ? "a mapping" : `${typeof v} ${JSON.stringify(v)}`;
}

/** Validate a full pack.yaml document (already parsed, targets merged). */
export function validatePack(doc: unknown, file: string): PackManifest {
  const c = new PackChecker(file);
  const obj = c.mapping(doc, "document");
  const extensions: Record<string, unknown> = {};
  for (const key of Object.keys(obj)) {
    if (key.startsWith("x-")) extensions[key] = obj[key];
    else if (!TOP_KEYS.has(key)) throw c.fail(key, "is not a pack.yaml field", "remove it or prefix it with x- for your own data");
  }
  if (obj.schema_version === undefined) throw c.fail("schema_version", "is missing", 'add schema_version: "1"');
  if (obj.schema_version !== "1") {
    throw c.fail("schema_version", `is ${JSON.stringify(obj.schema_version)}, not "1"`, 'write schema_version: "1" (quoted)');
  }
  if (obj.name === undefined) throw c.fail("name", "is missing", "add a name such as my-pack");
  const name = c.string(obj.name, "name");
  if (!NAME_RE.test(name)) throw c.fail("name", `'${name}' is not a valid name`, "use lowercase letters, digits and '-', starting with a letter");
  if (obj.type === undefined) throw c.fail("type", "is missing", "add type: meta, declarative or scripted");
  const type = c.string(obj.type, "type");
  if (!isKnownPackType(type)) {
    throw pluginError(`${file}: type '${type}' is not a known pack type; use meta, declarative or scripted (or install the plugin that provides it).`, {
      file,
      field: "type",
    });
  }
  const version = obj.version === undefined || obj.version === null ? null : String(obj.version);
  const depends_on = obj.depends_on === undefined ? [] : c.list(obj.depends_on, "depends_on").map((d, i) => c.string(d, `depends_on[${i}]`));
  const children = obj.children === undefined ? [] : c.children(obj.children, "children");
  const actions = obj.actions === undefined || obj.actions === null ? [] : c.actions(obj.actions, "actions");
  const teardown = obj.teardown === undefined || obj.teardown === null ? null : c.actions(obj.teardown, "teardown");
  return { schema_version: "1", name, type, version, depends_on, children, actions, teardown, extensions };
}
