// doctor's `serve-watch` note: when a `grex serve` keeps resident status for
// this workspace (this process, or a server answering on the workspace's
// socket), each pack it scans on every report instead of watching, and why.
// A note (severity ok), not a problem: such a pack is still reported right,
// only not faster.
import pkg from "../../package.json" with { type: "json" };
import type { Workspace } from "../core/base/workspace.ts";

type Add = (check: "serve-watch", severity: "ok", pack: string | null, detail: string, fixable?: boolean) => void;

export async function serveWatchFindings(ws: Workspace, packs: ReadonlyArray<{ id: string; dir: string }>, add: Add): Promise<void> {
  const { currentDirtyOracle } = await import("../core/git/worktree/dirty-oracle.ts");
  let report = (await currentDirtyOracle()?.watchReport(ws.stateDir)) ?? null;
  if (report === null && process.env.GREX_NO_SERVE !== "1") {
    const { ServeClient } = await import("../core/git/worktree/resident-client.ts");
    const client = new ServeClient(process.env, pkg.version);
    try {
      report = await client.watchReport(ws.stateDir);
    } finally {
      client.close();
    }
  }
  if (report === null) return;
  const idOf = new Map(packs.map((p) => [p.dir, p.id]));
  const scanned = report.filter((r) => !r.resident);
  for (const r of scanned) add("serve-watch", "ok", idOf.get(r.dir) ?? null, `grex serve scans ${idOf.has(r.dir) ? "this pack" : r.dir} on every status instead of watching it: ${r.reason}`);
  add("serve-watch", "ok", null, `grex serve keeps status for this workspace: it watches ${report.length - scanned.length} of the ${report.length} pack(s) it was asked about`);
}
