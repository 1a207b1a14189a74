// The MCP servers a workspace declares: `mcp.servers` of every installed pack
// (children included), read from their pack.yaml. A pack whose pack.yaml does
// not load, or a server id already taken by an earlier pack, is reported and
// left out; the rest stay usable. `doctor` reports the same problems as errors.
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { canonicalJson } from "../base/hash.ts";
import { loadPackYaml } from "./load.ts";
import type { McpServerDecl } from "./mcp-servers.ts";
import { loadWorkspaceView } from "../workspace/packs.ts";
import type { Workspace } from "../base/workspace.ts";

export interface DeclaredServer {
  decl: McpServerDecl;
  /** Pack id (workspace-relative path) that declares it. */
  pack: string;
  packDir: string;
  /** The pack's commit when installed ("" when unknown). */
  packSha: string;
  /** Identifies this declaration at this pack commit (tool-list cache key). */
  key: string;
}

export interface DeclaredProblem {
  kind: "pack-yaml" | "duplicate-id";
  pack: string;
  message: string;
}

export interface DeclaredSet {
  servers: DeclaredServer[];
  problems: DeclaredProblem[];
  /** Changes whenever any server is added, removed or redeclared. */
  fingerprint: string;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** Collect the declared servers of installed packs, in workspace order; the first declaration of an id wins. */
export async function collectDeclaredServers(ws: Workspace, warn: (m: string) => void): Promise<DeclaredSet> {
  const view = await loadWorkspaceView(ws, warn);
  const servers: DeclaredServer[] = [];
  const problems: DeclaredProblem[] = [];
  const owner = new Map<string, string>();
  for (const pack of view.packs) {
    if (!pack.lock || pack.lock.installed_at === "" || !existsSync(pack.dir)) continue;
    let decls: McpServerDecl[];
    try {
      decls = (await loadPackYaml(pack.dir))?.mcp_servers ?? [];
    } catch (err) {
      problems.push({ kind: "pack-yaml", pack: pack.id, message: err instanceof Error ? err.message : String(err) });
      continue;
    }
    for (const decl of decls) {
      const first = owner.get(decl.id);
      if (first !== undefined) {
        problems.push({
          kind: "duplicate-id",
          pack: pack.id,
          message: `MCP server id '${decl.id}' of pack '${pack.id}' is already declared by pack '${first}'; server ids must be unique in the workspace, so rename one of them.`,
        });
        continue;
      }
      owner.set(decl.id, pack.id);
      const packSha = pack.lock.sha;
      servers.push({ decl, pack: pack.id, packDir: pack.dir, packSha, key: sha256(`${canonicalJson(decl)}\n${packSha}`).slice(0, 32) });
    }
  }
  const fingerprint = sha256(servers.map((s) => `${s.pack}\t${s.key}`).join("\n"));
  return { servers, problems, fingerprint };
}
