// What a declared server is started with: the child's environment (its
// declared `env`, expanded, plus PATH, HOME and LANG, nothing else) and the
// HTTP headers of a streamable-http server (expanded). Shared by the gateway
// and `grex mcp status|call <server>`.
import type { DeclaredServer } from "../../core/pack/mcp-declared.ts";
import { expandVars, homeOf } from "../../core/base/vars.ts";

type Env = Record<string, string | undefined>;

const where = (s: DeclaredServer, field: string) => `mcp.servers '${s.decl.id}' ${field} of pack '${s.pack}'`;

export function childEnv(s: DeclaredServer, env: Env): Record<string, string> {
  const out: Record<string, string> = { HOME: homeOf(env) };
  for (const k of ["PATH", "LANG"]) if (env[k] !== undefined) out[k] = env[k] as string;
  for (const [k, val] of Object.entries(s.decl.env)) out[k] = expandVars(val, env, where(s, `env.${k}`));
  return out;
}

export function childHeaders(s: DeclaredServer, env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(s.decl.headers)) out[k] = expandVars(val, env, where(s, `headers.${k}`));
  return out;
}
