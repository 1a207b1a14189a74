// gita's `repos.csv` (`path,name,type,flags` per line, Python's csv with
// minimal quoting) and the `groups.csv` beside it (`group:repo repo:path`).
// gita lists local clones, not URLs: each clone's origin becomes the pack URL,
// its place in the workspace (or its gita name, outside it) the pack path, and
// the groups it belongs to its tags.
import { dirname, join, resolve } from "node:path";
import { expandHome, normalizePeerPath, workspacePathOf, type PeerContext, type PeerEntry, type PeerImport, type PeerProblem } from "./peer-common.ts";

/** Rows of a csv file as Python's csv module reads them (quotes, doubled quotes, quoted newlines). */
export function parseCsv(text: string, delimiter: string): Array<{ fields: string[]; line: number }> {
  const rows: Array<{ fields: string[]; line: number }> = [];
  let fields: string[] = [];
  let field = "";
  let quoted = false;
  let line = 1;
  let rowLine = 1;
  let rowStarted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else {
        if (ch === "\n") line++;
        field += ch;
      }
      continue;
    }
    if (ch === '"' && field === "") {
      quoted = true;
      rowStarted = true;
    } else if (ch === delimiter) {
      fields.push(field);
      field = "";
      rowStarted = true;
    } else if (ch === "\n" || ch === "\r") {
      if (ch === "\r" && text[i + 1] === "\n") i++;
      if (rowStarted || field !== "") rows.push({ fields: [...fields, field], line: rowLine });
      fields = [];
      field = "";
      rowStarted = false;
      line++;
      rowLine = line;
    } else {
      field += ch;
      rowStarted = true;
    }
  }
  if (rowStarted || field !== "") rows.push({ fields: [...fields, field], line: rowLine });
  return rows;
}

export async function readGita(ctx: PeerContext): Promise<PeerImport> {
  const groupsFile = join(dirname(ctx.abs), "groups.csv");
  const groupsText = ctx.readInclude(groupsFile);
  const tagsOf = new Map<string, string[]>();
  for (const row of groupsText === null ? [] : parseCsv(groupsText, ":")) {
    const [group, members = ""] = row.fields;
    if (!group) continue;
    for (const name of members.split(/\s+/).filter((n) => n !== "")) tagsOf.set(name, [...(tagsOf.get(name) ?? []), group]);
  }
  const entries: PeerEntry[] = [];
  const problems: PeerProblem[] = [];
  const notes: string[] = [];
  for (const row of parseCsv(ctx.text, ",")) {
    const [path = "", name = ""] = row.fields;
    const where = `${ctx.file}:${row.line}`;
    if (path === "") {
      problems.push({ path: name || "?", error: `${where}: the row has no repository path` });
      continue;
    }
    const gitaName = name || normalizePeerPath(path).split("/").pop() || path;
    const abs = resolve(ctx.workspaceRoot, expandHome(path, ctx.home));
    const url = ctx.originOf(abs);
    const at = workspacePathOf(ctx, abs, gitaName, notes);
    if (url === null) {
      problems.push({ path: at, error: `${where}: ${path} is not a clone with an origin remote, so there is no URL to register` });
      continue;
    }
    entries.push({ path: at, url, ref: null, tags: tagsOf.get(gitaName) ?? [], at: where });
  }
  return { format: "gita", entries, problems, notes };
}
