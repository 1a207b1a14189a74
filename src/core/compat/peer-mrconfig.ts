// myrepos' `.mrconfig`: INI-like sections named by the checkout's directory
// (relative to the file's directory, or absolute), each with a `checkout`
// shell command. A repository is one whose checkout starts with `git clone`;
// its URL and `-b/--branch` are read from that command's words, as
// `mr register` writes them (`git clone 'url' 'dir'`).
import { dirname, resolve } from "node:path";
import { shellWords } from "../base/shell-words.ts";
import { expandHome, workspacePathOf, type PeerContext, type PeerEntry, type PeerImport, type PeerProblem } from "./peer-common.ts";

interface Section {
  name: string;
  line: number;
  values: Map<string, string>;
}

/** Sections and their settings; a value continues on following lines indented with white space. */
export function parseMrconfig(text: string): Section[] {
  const sections: Section[] = [];
  let current: Section | null = null;
  let lastKey: string | null = null;
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    if (/^\s*#/.test(raw) || raw.trim() === "") return;
    if (/^\s/.test(raw) && current && lastKey !== null) {
      current.values.set(lastKey, `${current.values.get(lastKey) ?? ""}\n${raw.trim()}`);
      return;
    }
    const header = /^\[(.*)\]\s*$/.exec(raw);
    if (header) {
      current = { name: header[1]?.trim() ?? "", line: i + 1, values: new Map() };
      sections.push(current);
      lastKey = null;
      return;
    }
    const kv = /^\s*([^=\s]+)\s*=\s?(.*)$/.exec(raw);
    if (kv && !current) {
      // Settings before any section (mr's top-level `include`): kept under a nameless section.
      current = { name: "", line: i + 1, values: new Map() };
      sections.push(current);
    }
    if (kv && current) {
      lastKey = kv[1] ?? "";
      current.values.set(lastKey, kv[2] ?? "");
    }
  });
  return sections;
}

const OPERATORS = new Set(["&&", "||", ";", "|", "&"]);
/** git clone options that take a value as the next word. */
const VALUE_OPTIONS = new Set(["-b", "--branch", "-o", "--origin", "--depth", "--reference", "-c", "--config", "-j", "--jobs", "--template", "--separate-git-dir", "-u", "--upload-pack", "--filter", "--shallow-since", "--shallow-exclude"]);

/** The URL and branch of a `git clone` command; an error sentence when the command is something else. */
export function readCloneCommand(cmd: string): { url: string; ref: string | null; more: boolean } | { error: string } {
  const words = shellWords(cmd);
  const end = words.findIndex((w) => OPERATORS.has(w));
  const first = end === -1 ? words : words.slice(0, end);
  if (first[0] !== "git" || first[1] !== "clone") {
    return { error: `the checkout command is not a git clone (${first.slice(0, 2).join(" ") || "empty"}); grex manages git repositories only` };
  }
  let ref: string | null = null;
  const operands: string[] = [];
  for (let i = 2; i < first.length; i++) {
    const w = first[i] ?? "";
    if (w === "--") {
      operands.push(...first.slice(i + 1));
      break;
    }
    if (w === "-b" || w === "--branch") ref = first[++i] ?? null;
    else if (w.startsWith("--branch=")) ref = w.slice("--branch=".length);
    else if (VALUE_OPTIONS.has(w)) i++;
    else if (!w.startsWith("-")) operands.push(w);
  }
  const url = operands[0];
  if (!url) return { error: "the git clone command names no URL" };
  return { url, ref, more: end !== -1 };
}

export async function readMrconfig(ctx: PeerContext): Promise<PeerImport> {
  const entries: PeerEntry[] = [];
  const problems: PeerProblem[] = [];
  const notes: string[] = [];
  const base = dirname(ctx.abs);
  for (const s of parseMrconfig(ctx.text)) {
    const where = `${ctx.file}:${s.line}`;
    if (s.name === "DEFAULT" || s.name === "ALIAS") continue;
    if (s.name === "") {
      for (const key of s.values.keys()) notes.push(`${where}: the top-level '${key}' is not followed.`);
      continue;
    }
    if (/[$`]/.test(s.name)) {
      problems.push({ path: s.name, error: `${where}: the section name uses shell expansion, which grex does not run; write the directory out` });
      continue;
    }
    const abs = resolve(base, expandHome(s.name, ctx.home));
    const path = workspacePathOf(ctx, abs, abs.split("/").pop() ?? s.name, notes);
    const checkout = s.values.get("checkout");
    if (checkout === undefined) {
      problems.push({ path, error: `${where}: the section has no checkout command, so there is no URL to register` });
      continue;
    }
    const clone = readCloneCommand(checkout);
    if ("error" in clone) {
      problems.push({ path, error: `${where}: ${clone.error}` });
      continue;
    }
    if (clone.more) notes.push(`${where}: the commands after git clone in the checkout of ${path} are not carried over.`);
    for (const key of ["include", "chain"]) if (s.values.has(key)) notes.push(`${where}: '${key}' is not followed.`);
    entries.push({ path, url: clone.url, ref: clone.ref, tags: [], at: where });
  }
  return { format: "mrconfig", entries, problems, notes };
}
