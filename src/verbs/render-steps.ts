// One line per action step that a person can read: what happened to which
// path ("linked ~/.vimrc → dotfiles/files/vimrc", "backed up ~/.bashrc to …"),
// and the output of exec actions and hooks, prefixed with the pack id as `grex exec` does.
import { isAbsolute, relative, sep } from "node:path";
import type { RenderStyle } from "./types.ts";
import { paint } from "./render-style.ts";

export interface StepLike {
  pack: string;
  action: string;
  idx: number;
  result: string;
  details: Record<string, unknown>;
  message?: string;
}

/** `~/x` under home, `x` under cwd, else the absolute path. */
export function showPath(p: unknown, style: Pick<RenderStyle, "home" | "cwd">): string {
  if (typeof p !== "string") return String(p);
  const under = (root: string | undefined) => {
    if (!root) return undefined;
    const rel = relative(root, p);
    return rel !== "" && !isAbsolute(rel) && rel !== ".." && !rel.startsWith(`..${sep}`) ? rel : undefined;
  };
  const inCwd = under(style.cwd);
  if (inCwd !== undefined) return inCwd;
  const inHome = under(style.home);
  return inHome !== undefined ? `~${sep}${inHome}` : p;
}

const str = (x: unknown): string | undefined => (typeof x === "string" ? x : undefined);
const list = (x: unknown): string[] => (Array.isArray(x) ? x.map(String) : []);

/** What a changing step did, in words; undefined when there is nothing worth a line. */
function what(s: StepLike, style: RenderStyle): string | undefined {
  const d = s.details;
  const at = (k: string) => showPath(d[k], style);
  const would = s.result === "would_perform_change";
  const verb = (done: string, planned: string) => (would ? `would ${planned}` : done);
  if (typeof d.rollback === "string") return `rolled back ${s.action}: ${d.rollback}`;
  switch (s.action) {
    case "symlink": {
      if (d.removed !== undefined || d.remove !== undefined) {
        return `${verb("unlinked", "unlink")} ${at("dst")}${str(d.restored) ? `, put back ${showPath(d.restored, style)}` : ""}`;
      }
      const backup = str(d.backup) ? `; ${verb("backed up", "back up")} the existing file to ${at("backup")}` : "";
      return `${verb("linked", "link")} ${at("dst")} → ${at("src")}${backup}`;
    }
    case "mkdir": {
      const andParents = (dirs: string[]) => (dirs.length > 1 ? ` (and ${dirs.length - 1} parent${dirs.length > 2 ? "s" : ""})` : "");
      if (d.removed !== undefined || d.remove !== undefined) return `${verb("removed", "remove")} ${at("path")}${andParents(list(d.removed ?? d.remove))}`;
      return `${verb("created", "create")} ${at("path")}${andParents(list(d.created ?? d.create))}`;
    }
    case "rmdir":
      if (str(d.restored) || str(d.restore)) return `${verb("put back", "put back")} ${at("path")} from ${showPath(d.restored ?? d.restore, style)}`;
      if (d.recreated || d.recreate) return `${verb("recreated", "recreate")} ${at("path")}`;
      if (str(d.backup)) return `${verb("moved", "move")} ${at("path")} aside to ${at("backup")}`;
      return `${verb("deleted", "delete")} ${at("path")}`;
    case "env": {
      const files = list(d.files).map((f) => showPath(f, style));
      if (d.teardown === true) {
        const from = d.scope === "session" ? "for this run" : files.length > 0 ? `from ${files.join(", ")}` : `(${String(d.scope)})`;
        return `${verb("removed", "remove")} ${String(d.name)} ${from}`;
      }
      const where = d.scope === "session" ? "for this run" : files.length > 0 ? `in ${files.join(", ")}` : `(${String(d.scope)})`;
      return `${verb("set", "set")} ${String(d.name)} ${where}`;
    }
    case "exec": {
      const cmd = list(d.cmd).join(" ");
      return `${verb("ran", "run")} ${cmd}${typeof d.exit === "number" && d.exit !== 0 ? ` (exit ${d.exit})` : ""}`;
    }
    case "when":
      return undefined; // its nested steps have their own lines
    default:
      if (s.action.startsWith("hook:")) return `${verb("ran", "run")} the ${s.action.slice(5)} hook`;
      return `${s.action}[${s.idx}] ${s.result}`;
  }
}

/** Lines for the steps that changed something or failed, plus exec/hook output prefixed `[pack] `. */
export function stepLines(steps: readonly StepLike[], style: RenderStyle): string[] {
  const c = paint(style.color);
  const lines: string[] = [];
  for (const s of steps) {
    if (s.result === "failed") {
      const reason = str(s.details.reason) ?? s.message ?? "";
      lines.push(`  ${c.red(`${s.pack}: ${s.action} failed`)}${reason ? `: ${reason}` : ""}`);
    } else if (s.result === "performed_change" || s.result === "would_perform_change") {
      const text = what(s, style);
      if (text) lines.push(`  ${c.dim(`${s.pack}:`)} ${text}`);
    } else continue;
    // Tagged as `grex exec` tags them: `[pack]` for stdout, `[pack]!` for stderr.
    for (const [stream, tag] of [["stdout", ""], ["stderr", "!"]] as const) {
      const out = str(s.details[stream]);
      if (!out) continue;
      for (const line of out.replace(/\n$/, "").split("\n")) lines.push(`    ${c.cyan(`[${s.pack}]${tag}`)} ${line}`);
    }
  }
  return lines;
}
