// doctor's checks of what makes a workspace safe to share through git:
//   team-files       .gitattributes merges grex.jsonl and grex.lock.jsonl as
//                    unions (fixable; checked when the workspace is in git). Runtime events an older grex left in
//                    grex.jsonl are no finding: they read as before, and
//                    `doctor --compact` moves them to the journal.
//   merge-conflicts  after a union merge, two branches changed the same pack
//                    to different values (grex.jsonl), or the lockfile records
//                    one pack at two commits: reported, never silently decided.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import type { ManifestEvent } from "../core/workspace/manifest.ts";
import type { Workspace } from "../core/base/workspace.ts";

export const TEAM_CHECKS = ["team-files", "merge-conflicts"] as const;
type TeamCheck = (typeof TEAM_CHECKS)[number];
type Add = (check: TeamCheck, severity: "warning" | "error", pack: string | null, detail: string, autoFixable?: boolean) => void;

export async function teamFindings(ws: Workspace, events: readonly ManifestEvent[], add: Add): Promise<void> {
  const [{ missingMergeLines, GITATTRIBUTES }, { divergences }, { lockConflicts }] = await Promise.all([
    import("../core/workspace/gitattributes.ts"),
    import("../core/workspace/manifest-conflicts.ts"),
    import("../core/workspace/lockfile.ts"),
  ]);
  // Only a workspace kept in git merges; elsewhere the lines would change nothing.
  const missing = inGitWorkTree(ws.root) ? missingMergeLines(ws.root) : [];
  if (missing.length > 0) {
    add("team-files", "warning", null, `${GITATTRIBUTES} lacks ${missing.map((l) => `'${l}'`).join(" and ")}: two branches that each add a pack would conflict in git`, true);
  }
  for (const d of divergences(events)) {
    const how = d.field === "rm" ? "one removed it, the other changed it" : `the ${d.field} differs`;
    const way = d.field === "rm" ? `grex rm ${d.id}, or grex update ${d.id} --ref <ref> to keep it` : `grex update ${d.id} --ref <ref> with the one to keep`;
    add("merge-conflicts", "error", d.id, `grex.jsonl: two branches changed pack '${d.id}' and ${how} (${d.sides.join(" vs ")}); choose with ${way}`);
  }
  for (const [id, shas] of lockConflicts(ws)) {
    add("merge-conflicts", "error", id, `grex.lock.jsonl records pack '${id}' at ${shas.length} commits (${shas.map((s) => s.slice(0, 7)).join(", ")}) after a merge; grex sync resolves it anew, or keep the line you want`);
  }
}

/** The repair doctor --fix makes for team-files: the union-merge lines. */
export async function fixTeamFiles(ws: Workspace): Promise<boolean> {
  const { ensureMergeLines } = await import("../core/workspace/gitattributes.ts");
  return ensureMergeLines(ws.root).length > 0;
}

/** The directory or one above it holds a `.git`: the workspace is part of a git work tree. */
function inGitWorkTree(dir: string): boolean {
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(join(d, ".git"))) return true;
    if (dirname(d) === d) return false;
  }
}
