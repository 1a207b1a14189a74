// Load `.grex/pack.yaml` plus the platform override `.grex/targets/<os>.yaml`.
// What could hurt is rejected before it is looked at: files over 1 MiB are not
// parsed, and YAML anchors/aliases are refused on the parsed node tree, before
// anything is converted to JS values (so an alias bomb is never expanded).
import { join, normalize } from "node:path";
import { integrityError } from "../base/errors.ts";
import { ABSENT, readRegularFile } from "../fs/read-file.ts";
import { currentOs, type OsName } from "../base/os.ts";
import { type ActionItem, type MoreChecks, type PackManifest, type PackOverride, validateOverride, validatePack } from "./schema.ts";

export const MAX_PACK_YAML_BYTES = 1024 * 1024;

/** Read pack.yaml (or an override) as UTF-8: a regular file, inside the pack, at most 1 MiB; ABSENT when missing. */
function readSmallText(file: string, packDir: string): string | typeof ABSENT {
  const bytes = readRegularFile(file, {
    inside: packDir,
    maxBytes: MAX_PACK_YAML_BYTES,
    error: (message) => integrityError(message, { file }),
    tooBig: "is over the 1 MiB limit for pack files; keep pack.yaml small and move data into files/",
  });
  if (bytes === ABSENT) return ABSENT;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw integrityError(`${file} is not UTF-8 text; save it as a UTF-8 YAML file.`, { file });
  }
}

/** Deeper nesting than any pack needs; refused before converting (a stack-depth guard). */
export const MAX_YAML_DEPTH = 64;

/**
 * Parse YAML text to a JS value, refusing anchors, aliases, duplicate keys and
 * deep nesting. The yaml library's own `uniqueKeys` check compares each key
 * with every earlier key of its mapping (quadratic: 30,000 keys took half a
 * minute), so it is off and duplicates are found here with one Set per mapping.
 */
export async function parsePackYamlText(text: string, file: string): Promise<unknown> {
  const YAML = await import("yaml");
  const lines = new YAML.LineCounter();
  // core schema + merge off: no YAML 1.1 `<<` merge keys or exotic tags.
  const doc = YAML.parseDocument(text, { schema: "core", merge: false, uniqueKeys: false, prettyErrors: false, lineCounter: lines });
  const err = doc.errors[0];
  if (err) {
    const line = lines.linePos(err.pos[0]).line;
    const reason = (err.message.split("\n")[0] ?? "").replace(/[.;:\s]+$/, "");
    throw integrityError(`${file} line ${line} is not valid YAML (${reason}); fix the syntax.`, { file, line });
  }
  const found: { what?: string; offset?: number; fix?: string } = {};
  const stop = (what: string, offset: number | undefined, fix: string) => {
    Object.assign(found, { what, offset: offset ?? 0, fix });
    return YAML.visit.BREAK;
  };
  YAML.visit(doc, {
    Node(_key, node, path) {
      if (YAML.isAlias(node)) return stop(`uses a YAML alias *${node.source}`, node.range?.[0], ALIAS_FIX);
      if (node.anchor) return stop(`uses a YAML anchor &${node.anchor}`, node.range?.[0], ALIAS_FIX);
      if (path.length > MAX_YAML_DEPTH * 2) {
        return stop(`nests deeper than ${MAX_YAML_DEPTH} levels`, node.range?.[0], "flatten it; no pack field needs that depth");
      }
      if (!YAML.isMap(node)) return undefined;
      const seen = new Set<string>();
      for (const pair of node.items) {
        const key = pair.key;
        if (!YAML.isScalar(key)) {
          return stop("uses a mapping or list as a key", YAML.isNode(key) ? key.range?.[0] : node.range?.[0], "use plain text keys");
        }
        // Compared as text: `1:` and `"1":` become the same property.
        const text = String(key.value);
        if (seen.has(text)) return stop(`is not valid YAML (Map keys must be unique: '${text}' is repeated)`, key.range?.[0], "fix the syntax");
        seen.add(text);
      }
      return undefined;
    },
  });
  if (found.what !== undefined) {
    const { what, offset = 0, fix = "" } = found;
    const line = lines.linePos(offset).line;
    throw integrityError(`${file} line ${line} ${what}${fix.startsWith("and ") ? ", " : "; "}${fix}.`, { file, line });
  }
  // maxAliasCount 0: a second guard, any alias that slipped through throws instead of expanding.
  return doc.toJS({ maxAliasCount: 0 });
}

const ALIAS_FIX = "and anchors and aliases are not allowed in pack files (alias-bomb defence); write the values out in full";

async function readYaml(file: string, packDir: string): Promise<unknown | typeof ABSENT> {
  const text = readSmallText(file, packDir);
  return text === ABSENT ? ABSENT : parsePackYamlText(text, file);
}

/**
 * Merge an override over the base: scalars replace; `depends_on`, `children`
 * and `actions` append after the base (`actions_replace: true` replaces
 * `actions` instead, and with no `actions` in the override leaves none);
 * `teardown` is not one of the appended lists, so it replaces; `x-` keys merge
 * per key.
 */
export function applyOverride(base: PackManifest, o: PackOverride): PackManifest {
  return {
    schema_version: "1",
    name: o.name ?? base.name,
    type: o.type ?? base.type,
    version: o.present.has("version") ? (o.version ?? null) : base.version,
    depends_on: [...base.depends_on, ...(o.depends_on ?? [])],
    children: [...base.children, ...(o.children ?? [])],
    actions: o.actions_replace ? (o.actions ?? []) : [...base.actions, ...(o.actions ?? [])],
    teardown: o.present.has("teardown") ? (o.teardown ?? null) : base.teardown,
    extensions: { ...base.extensions, ...o.extensions },
    ...mergeMcpServers(base, o),
  };
}

/** An override's `mcp.servers` replace the base's servers of the same id and append the others. */
function mergeMcpServers(base: PackManifest, o: PackOverride): Pick<PackManifest, "mcp_servers"> {
  if (!o.mcp_servers) return base.mcp_servers ? { mcp_servers: base.mcp_servers } : {};
  const ids = new Set(o.mcp_servers.map((s) => s.id));
  return { mcp_servers: [...(base.mcp_servers ?? []).filter((s) => !ids.has(s.id)), ...o.mcp_servers] };
}

/** Two children must not share a directory (compared ignoring case, for case-insensitive file systems). */
function checkChildPaths(m: PackManifest, baseCount: number, file: string, targetFile: string): void {
  const seen = new Map<string, number>();
  m.children.forEach((c, i) => {
    const key = c.path.toLowerCase();
    const first = seen.get(key);
    if (first !== undefined) {
      const [f, idx] = i < baseCount ? [file, i] : [targetFile, i - baseCount];
      const firstWhere = first < baseCount ? `children[${first}]` : `children[${first - baseCount}] of ${targetFile}`;
      throw integrityError(
        `${f}: children[${idx}].path '${c.path}' is the same directory as ${firstWhere}; give one of them another path.`,
        { file: f, field: `children[${idx}].path` },
      );
    }
    seen.set(key, i);
  });
}

/**
 * The pack's manifest, or null when the repository has no `.grex/pack.yaml`.
 * Throws GrexError: integrity (exit 3), or plugin (exit 8) for an unknown
 * action or pack type.
 */
export async function loadPackYaml(packDir: string, opts?: { os?: OsName; more?: MoreChecks }): Promise<PackManifest | null> {
  const file = join(packDir, ".grex", "pack.yaml");
  const doc = await readYaml(file, packDir);
  if (doc === ABSENT) return null;
  if (doc === null || doc === undefined) {
    throw integrityError(`${file} is empty; write at least schema_version: "1", name and type.`, { file });
  }
  let manifest = validatePack(doc, file, opts?.more);
  const targetFile = join(packDir, ".grex", "targets", `${opts?.os ?? currentOs()}.yaml`);
  const over = await readYaml(targetFile, packDir);
  const baseChildren = manifest.children.length;
  // An empty override file changes nothing.
  if (over !== ABSENT && over !== null && over !== undefined) {
    manifest = applyOverride(manifest, validateOverride(over, targetFile, opts?.more));
  }
  checkChildPaths(manifest, baseChildren, file, targetFile);
  return manifest;
}

interface DstEntry {
  key: string;
  dst: string;
  where: string;
  /** Indices of the enclosing `when` items, outermost first. */
  scope: number[];
}

function collectSymlinks(items: ActionItem[], where: string, scope: number[], out: DstEntry[], expand: (dst: string) => string): void {
  items.forEach((item, i) => {
    const sym = item.symlink;
    if (sym !== null && typeof sym === "object" && "dst" in sym && typeof sym.dst === "string") {
      out.push({ key: normalizeDst(expand(sym.dst)), dst: sym.dst, where: `${where}[${i}].symlink.dst`, scope });
    }
    const when = item.when;
    if (when !== null && typeof when === "object" && "actions" in when && Array.isArray(when.actions)) {
      collectSymlinks(when.actions as ActionItem[], `${where}[${i}].when.actions`, [...scope, i], out, expand);
    }
  });
}

function normalizeDst(dst: string): string {
  const n = normalize(dst);
  const trimmed = n.replace(/[/\\]+$/, "");
  return trimmed === "" ? n : trimmed;
}

const isPrefix = (a: number[], b: number[]) => a.length <= b.length && a.every((x, i) => b[i] === x);

/**
 * Plan-phase check: two `symlink` actions of one pack must not share a `dst`.
 *
 * `dst` is compared as the action will use it: `expand` (the sync engine's:
 * variables, a leading `~`, resolved against the pack) turns `$HOME/x`,
 * `${HOME}/x` and `~/x` into one path; then `path.normalize`, trailing slashes
 * removed. Without `expand`, the text as written is compared.
 * Symlinks in two different `when` blocks are not compared with each other:
 * their conditions may exclude each other (one per OS, say). A symlink inside a
 * `when` is compared with those at the levels around it. `actions` and
 * `teardown` are checked separately.
 */
export function checkDuplicateSymlinkDst(manifest: PackManifest, file: string, expand: (dst: string) => string = (d) => d): void {
  const lists: Array<[ActionItem[], string]> = [[manifest.actions, "actions"]];
  if (manifest.teardown) lists.push([manifest.teardown, "teardown"]);
  for (const [items, name] of lists) {
    const all: DstEntry[] = [];
    collectSymlinks(items, name, [], all, expand);
    // Only entries with the same key are compared: linear in the number of symlinks.
    const byKey = new Map<string, DstEntry[]>();
    for (const b of all) {
      const same = byKey.get(b.key);
      const a = same?.find((x) => isPrefix(x.scope, b.scope) || isPrefix(b.scope, x.scope));
      if (a) {
        const how = a.dst === b.dst ? "" : ` ('${a.dst}' names the same path)`;
        throw integrityError(
          `${file}: ${b.where} '${b.dst}' is the same target as ${a.where}${how}; give each symlink its own dst or remove one of them.`,
          { file, field: b.where },
        );
      }
      if (same) same.push(b);
      else byKey.set(b.key, [b]);
    }
  }
}
