// Load `.grex/pack.yaml` plus the platform override `.grex/targets/<os>.yaml`.
// What could hurt is rejected before it is looked at: files over 1 MiB are not
// parsed, and YAML anchors/aliases are refused on the parsed node tree, before
// anything is converted to JS values (so an alias bomb is never expanded).
import { existsSync } from "node:fs";
import { open } from "node:fs/promises";
import { join, normalize } from "node:path";
import { errnoCode, integrityError } from "../errors.ts";
import { currentOs, type OsName } from "../os.ts";
import { type ActionItem, type PackManifest, type PackOverride, validateOverride, validatePack } from "./schema.ts";

export const MAX_PACK_YAML_BYTES = 1024 * 1024;

const ABSENT = Symbol("absent");

/** Read a file of at most 1 MiB as UTF-8 text; ABSENT when it does not exist. */
async function readSmallText(file: string): Promise<string | typeof ABSENT> {
  // Most packs have no pack.yaml: say so without a round trip through the I/O thread pool.
  if (!existsSync(file)) return ABSENT; // ENOENT and ENOTDIR alike; a race with a creation just reads it next time
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(file, "r");
  } catch (err) {
    const code = errnoCode(err);
    if (code === "ENOENT" || code === "ENOTDIR") return ABSENT;
    throw integrityError(`${file} cannot be read (${code ?? "error"}); check its permissions.`, { file });
  }
  try {
    const st = await fh.stat();
    if (st.isDirectory()) throw integrityError(`${file} is a directory, not a file; replace it with a YAML file.`, { file });
    const tooBig = () =>
      integrityError(`${file} is over the 1 MiB limit for pack files; keep pack.yaml small and move data into files/.`, { file });
    if (st.size > MAX_PACK_YAML_BYTES) throw tooBig();
    // Read one byte past the limit in case the file grew since the stat.
    const buf = Buffer.alloc(MAX_PACK_YAML_BYTES + 1);
    let len = 0;
    while (len < buf.length) {
      const { bytesRead } = await fh.read(buf, len, buf.length - len, len);
      if (bytesRead === 0) break;
      len += bytesRead;
    }
    if (len > MAX_PACK_YAML_BYTES) throw tooBig();
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(buf.subarray(0, len));
    } catch {
      throw integrityError(`${file} is not UTF-8 text; save it as a UTF-8 YAML file.`, { file });
    }
  } finally {
    await fh.close();
  }
}

/** Parse YAML text to a JS value, refusing anchors and aliases. */
export async function parsePackYamlText(text: string, file: string): Promise<unknown> {
  const YAML = await import("yaml");
  const lines = new YAML.LineCounter();
  // core schema + merge off: no YAML 1.1 `<<` merge keys or exotic tags.
  const doc = YAML.parseDocument(text, { schema: "core", merge: false, uniqueKeys: true, prettyErrors: false, lineCounter: lines });
  const err = doc.errors[0];
  if (err) {
    const line = lines.linePos(err.pos[0]).line;
    const reason = (err.message.split("\n")[0] ?? "").replace(/[.;:\s]+$/, "");
    throw integrityError(`${file} line ${line} is not valid YAML (${reason}); fix the syntax.`, { file, line });
  }
  const found: { what?: string; offset?: number } = {};
  YAML.visit(doc, {
    Node(_key, node) {
      if (YAML.isAlias(node)) found.what = `alias *${node.source}`;
      else if (node.anchor) found.what = `anchor &${node.anchor}`;
      else return undefined;
      found.offset = node.range?.[0] ?? 0;
      return YAML.visit.BREAK;
    },
  });
  if (found.what !== undefined) {
    const { what, offset = 0 } = found;
    const line = lines.linePos(offset).line;
    throw integrityError(
      `${file} line ${line} uses a YAML ${what}, and anchors and aliases are not allowed in pack files (alias-bomb defence); write the values out in full.`,
      { file, line },
    );
  }
  // maxAliasCount 0: a second guard, any alias that slipped through throws instead of expanding.
  return doc.toJS({ maxAliasCount: 0 });
}

async function readYaml(file: string): Promise<unknown | typeof ABSENT> {
  const text = await readSmallText(file);
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
  };
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
export async function loadPackYaml(packDir: string, opts?: { os?: OsName }): Promise<PackManifest | null> {
  const file = join(packDir, ".grex", "pack.yaml");
  const doc = await readYaml(file);
  if (doc === ABSENT) return null;
  if (doc === null || doc === undefined) {
    throw integrityError(`${file} is empty; write at least schema_version: "1", name and type.`, { file });
  }
  let manifest = validatePack(doc, file);
  const targetFile = join(packDir, ".grex", "targets", `${opts?.os ?? currentOs()}.yaml`);
  const over = await readYaml(targetFile);
  const baseChildren = manifest.children.length;
  // An empty override file changes nothing.
  if (over !== ABSENT && over !== null && over !== undefined) {
    manifest = applyOverride(manifest, validateOverride(over, targetFile));
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

function collectSymlinks(items: ActionItem[], where: string, scope: number[], out: DstEntry[]): void {
  items.forEach((item, i) => {
    const sym = item.symlink;
    if (sym !== null && typeof sym === "object" && "dst" in sym && typeof sym.dst === "string") {
      out.push({ key: normalizeDst(sym.dst), dst: sym.dst, where: `${where}[${i}].symlink.dst`, scope });
    }
    const when = item.when;
    if (when !== null && typeof when === "object" && "actions" in when && Array.isArray(when.actions)) {
      collectSymlinks(when.actions as ActionItem[], `${where}[${i}].when.actions`, [...scope, i], out);
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
 * `dst` is compared as written, after `path.normalize` and with trailing
 * slashes removed. Variables are NOT expanded here (that belongs to the action
 * modules), so `$HOME/x` and `${HOME}/x` count as different targets.
 * Symlinks in two different `when` blocks are not compared with each other:
 * their conditions may exclude each other (one per OS, say). A symlink inside a
 * `when` is compared with those at the levels around it. `actions` and
 * `teardown` are checked separately.
 */
export function checkDuplicateSymlinkDst(manifest: PackManifest, file: string): void {
  const lists: Array<[ActionItem[], string]> = [[manifest.actions, "actions"]];
  if (manifest.teardown) lists.push([manifest.teardown, "teardown"]);
  for (const [items, name] of lists) {
    const all: DstEntry[] = [];
    collectSymlinks(items, name, [], all);
    for (let j = 1; j < all.length; j++) {
      const b = all[j] as DstEntry;
      for (let i = 0; i < j; i++) {
        const a = all[i] as DstEntry;
        if (a.key !== b.key || !(isPrefix(a.scope, b.scope) || isPrefix(b.scope, a.scope))) continue;
        throw integrityError(
          `${file}: ${b.where} '${b.dst}' is the same target as ${a.where}; give each symlink its own dst or remove one of them.`,
          { file, field: b.where },
        );
      }
    }
  }
}
