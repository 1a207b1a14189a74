// Load `.grex/pack.yaml` (plus the platform override in `.grex/targets/`),
// rejecting what could hurt before looking at it: files over 1 MiB and YAML
// anchors/aliases (alias-bomb defence). The yaml parser is loaded lazily.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, normalize } from "node:path";
import { integrityError } from "../errors.ts";
import { currentOs, type OsName } from "../os.ts";
import { type ActionItem, type PackManifest, validatePack } from "./schema.ts";

export const MAX_PACK_YAML_BYTES = 1 << 20;
const LIST_KEYS = ["actions", "children", "depends_on"] as const;

async function readYaml(file: string): Promise<unknown> {
  const size = statSync(file).size;
  if (size > MAX_PACK_YAML_BYTES) {
    throw integrityError(`${file} is ${size} bytes, over the 1 MiB limit for pack.yaml; move data out of it.`, { file });
  }
  const text = readFileSync(file, "utf8");
  const YAML = await import("yaml");
  const doc = YAML.parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  const err = doc.errors[0];
  if (err) {
    const line = err.linePos?.[0]?.line;
    throw integrityError(`${file}${line ? ` line ${line}` : ""} is not valid YAML (${err.message.split("\n")[0]}); fix the syntax.`, { file });
  }
  let anchor: string | null = null;
  YAML.visit(doc, {
    Node(_key, node) {
      if (YAML.isAlias(node)) anchor = `alias *${node.source}`;
      else if ("anchor" in node && typeof node.anchor === "string" && node.anchor !== "") anchor = `anchor &${node.anchor}`;
      return anchor ? YAML.visit.BREAK : undefined;
    },
  });
  if (anchor) {
    throw integrityError(`${file} uses a YAML ${anchor}; anchors and aliases are not allowed in pack.yaml, write the values out.`, { file });
  }
  return doc.toJS({ maxAliasCount: 0 });
}

function mergeTarget(base: Record<string, unknown>, over: Record<string, unknown>, file: string): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  const replaceActions = over.actions_replace === true;
  for (const [key, value] of Object.entries(over)) {
    if (key === "actions_replace") continue;
    if ((LIST_KEYS as readonly string[]).includes(key) && !(key === "actions" && replaceActions)) {
      if (!Array.isArray(value)) throw integrityError(`${file}: ${key} must be a list; write it as a YAML list.`, { file, field: key });
      const prev = base[key];
      merged[key] = [...(Array.isArray(prev) ? prev : []), ...value];
    } else {
      merged[key] = value;
    }
  }
  return merged;
}

/** The pack's manifest, or null when the repository has no `.grex/pack.yaml`. */
export async function loadPackYaml(packDir: string, opts?: { os?: OsName }): Promise<PackManifest | null> {
  const file = join(packDir, ".grex", "pack.yaml");
  if (!existsSync(file)) return null;
  let doc = await readYaml(file);
  const targetFile = join(packDir, ".grex", "targets", `${opts?.os ?? currentOs()}.yaml`);
  if (existsSync(targetFile)) {
    const over = await readYaml(targetFile);
    if (over !== null && over !== undefined) {
      if (typeof over !== "object" || Array.isArray(over)) {
        throw integrityError(`${targetFile} must be a mapping of pack.yaml fields; write key: value pairs.`, { file: targetFile });
      }
      if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return validatePack(doc, file);
      doc = mergeTarget(doc as Record<string, unknown>, over as Record<string, unknown>, targetFile);
    }
  }
  return validatePack(doc, file);
}

function symlinkDsts(items: ActionItem[], where: string, out: Array<[string, string]>): void {
  items.forEach((item, i) => {
    const sym = item.symlink;
    if (sym && typeof sym === "object" && "dst" in sym && typeof sym.dst === "string") out.push([sym.dst, `${where}[${i}]`]);
    const when = item.when;
    if (when && typeof when === "object" && "actions" in when && Array.isArray(when.actions)) {
      symlinkDsts(when.actions as ActionItem[], `${where}[${i}].when.actions`, out);
    }
  });
}

/**
 * Two symlink actions of one pack must not target the same `dst`. Compared on
 * the written text after path normalisation (variables are not expanded here,
 * so `$HOME/x` and `~/x` count as different).
 */
export function checkDuplicateSymlinkDst(manifest: PackManifest, file: string): void {
  const seen = new Map<string, string>();
  const all: Array<[string, string]> = [];
  symlinkDsts(manifest.actions, "actions", all);
  for (const [dst, where] of all) {
    const key = normalize(dst).replace(/[/\\]+$/, "");
    const first = seen.get(key);
    if (first) {
      throw integrityError(`${file}: ${where}.symlink.dst '${dst}' is also the dst of ${first}; give each symlink its own dst.`, {
        file,
        field: `${where}.symlink.dst`,
      });
    }
    seen.set(key, where);
  }
}
