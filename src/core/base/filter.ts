// `--filter <expr>`: comma-separated terms that must all match a pack.
//   <glob>          matches the pack id or its workspace-relative path
//   name=<glob>     matches the pack's name (last path segment)
//   type=<type>     exact pack type
//   depth=<n>       exact depth (top-level packs have depth 0)
//   depth<=<n>      depth at most n
import { usageError } from "./errors.ts";

export interface FilterablePack {
  id: string;
  path: string;
  type: string;
  depth: number;
}

export type PackPredicate = (pack: FilterablePack) => boolean;

const globCache = new Map<string, (s: string) => boolean>();

/** Glob match: `*` and `?` stay within one path segment, `**` crosses segments. */
export function globMatch(pattern: string, text: string): boolean {
  let fn = globCache.get(pattern);
  if (!fn) {
    let re = "";
    for (let i = 0; i < pattern.length; i++) {
      const c = pattern[i] as string;
      if (c === "*") {
        if (pattern[i + 1] === "*") {
          re += ".*";
          i++;
        } else re += "[^/]*";
      } else if (c === "?") re += "[^/]";
      else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
    }
    const compiled = new RegExp(`^${re}$`);
    fn = (s) => compiled.test(s);
    globCache.set(pattern, fn);
  }
  return fn(text);
}

export function parseFilter(expr: string | undefined): PackPredicate {
  if (expr === undefined || expr.trim() === "") return () => true;
  const preds: PackPredicate[] = [];
  for (const rawTerm of expr.split(",")) {
    const term = rawTerm.trim();
    if (term === "") throw usageError(`Invalid --filter '${expr}': empty term; separate terms with single commas.`);
    const m = /^(name|type|depth)\s*(<=|=)\s*(.*)$/.exec(term);
    if (!m) {
      if (/[=<>]/.test(term)) {
        throw usageError(
          `Invalid --filter term '${term}': use a glob, name=<glob>, type=<type>, depth=<n> or depth<=<n>.`,
        );
      }
      preds.push((p) => globMatch(term, p.id) || globMatch(term, p.path));
      continue;
    }
    const [, key, op, value = ""] = m;
    if (value === "") throw usageError(`Invalid --filter term '${term}': '${key}' needs a value.`);
    if (key === "depth") {
      if (!/^\d+$/.test(value)) throw usageError(`Invalid --filter term '${term}': depth takes a whole number.`);
      const n = Number(value);
      preds.push(op === "=" ? (p) => p.depth === n : (p) => p.depth <= n);
    } else if (op !== "=") {
      throw usageError(`Invalid --filter term '${term}': only depth supports '<='.`);
    } else if (key === "name") {
      preds.push((p) => globMatch(value, p.id.slice(p.id.lastIndexOf("/") + 1)));
    } else {
      preds.push((p) => p.type === value);
    }
  }
  return (p) => preds.every((f) => f(p));
}
