// `grex serve` over stdio straight from argv, and what it shares with the serve
// verb. This module is on the path to the first `initialize` reply, so it
// loads neither the verb table, cac nor valibot, and not node:fs (about a
// millisecond): finding the workspace, the only thing here that reads the
// filesystem, waits for the first tool request; the reply does not depend on it.
import { resolve } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { PermitScheduler, resolveParallel } from "../core/locks/scheduler.ts";
import { stderr } from "../core/base/stdio-native.ts";
import { DEFAULT_CHILD_IDLE_MS, DEFAULT_MAX_CHILDREN, type GatewayOptions } from "./gateway/types.ts";
import type { ServerOptions } from "./server.ts";

type Location = Pick<ServerOptions, "cwd" | "manifest">;

/**
 * One server = one workspace, fixed for its life: `--manifest` (made absolute), else
 * the nearest workspace at or above cwd; with none yet, cwd (where `init` creates it).
 */
export function serverLocation(cwd: string, manifest: string | undefined): Location {
  const dir = resolve(cwd);
  if (manifest !== undefined) return { cwd: dir, manifest: resolve(dir, manifest) };
  const { findWorkspace } = require("../core/base/workspace.ts") as typeof import("../core/base/workspace.ts");
  try {
    return { cwd: findWorkspace(dir).root, manifest: undefined };
  } catch {
    return { cwd: dir, manifest: undefined };
  }
}

/**
 * serverLocation worked out when first read (by the first tool request; the
 * `initialize` reply does not need it) and fixed from then on.
 */
function locationOnFirstUse(cwd: string, manifest: string | undefined): Location {
  let found: Location | undefined;
  const get = () => (found ??= serverLocation(cwd, manifest));
  return {
    get cwd() {
      return get().cwd;
    },
    get manifest() {
      return get().manifest;
    },
  };
}

/** The gateway to the workspace's pack-declared MCP servers (loaded on the first tool request). */
export async function makeGateway(location: Location, env: Record<string, string | undefined>, o: { approve?: string[]; maxChildren?: number; idleMs?: number }) {
  const { LazyGateway } = await import("./gateway/handle.ts");
  const opts: GatewayOptions = {
    // Read through, not copied: the location may not be worked out yet (locationOnFirstUse).
    get cwd() {
      return location.cwd;
    },
    get manifest() {
      return location.manifest;
    },
    env,
    version: pkg.version,
    maxChildren: o.maxChildren ?? DEFAULT_MAX_CHILDREN,
    idleMs: o.idleMs ?? DEFAULT_CHILD_IDLE_MS,
    approve: o.approve ?? [],
    log: logToStderr,
    childStderr: (server, line) => stderr.write(`[${server}] ${line}\n`),
  };
  return new LazyGateway(opts);
}

/** How long after its start a server sets up resident status: off the path to the first reply. */
export const RESIDENT_START_MS = 250;

/**
 * Resident status (resident.ts) for the server at `location`, started
 * RESIDENT_START_MS after the server (the module and the workspace lookup stay
 * off the path to the `initialize` reply, which an agent waits for); the
 * function returned stops it (socket removed, watches closed).
 */
export function residentSoon(location: Location, version: string, log: (m: string) => void): () => Promise<void> {
  let started: Promise<{ stop(): void } | null> | null = null;
  if (process.env.GREX_NO_SERVE === "1") return async () => {}; // no resident status at all
  const timer = setTimeout(() => {
    started = import("./resident.ts").then(
      (m) => m.startResident(m.residentRoot(location), version, process.env, log),
      () => null,
    );
  }, RESIDENT_START_MS);
  return async () => {
    clearTimeout(timer);
    (await started)?.stop();
  };
}

export const logToStderr = (m: string): void => {
  stderr.write(`grex serve: ${m}\n`);
};

/**
 * `grex serve` over stdio straight from argv, skipping the CLI adapter: cac and
 * the verb table then load on the first tool call instead of before the first
 * reply. Handles only the plain form (`--manifest`, `--parallel`, `-v`, and the
 * ignored `--json`/`--plain`); returns undefined for anything else, and the
 * caller runs the normal CLI path, which also reports bad flags.
 */
export async function serveFromArgv(argv: readonly string[], cwd = process.cwd(), env: Record<string, string | undefined> = process.env): Promise<number | undefined> {
  if (argv[0] !== "serve") return undefined;
  let manifest: string | undefined;
  let parallel: number | undefined;
  let verbose = 0;
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i] as string;
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    if (/^-v+$/.test(arg)) verbose += arg.length - 1;
    else if (arg === "--verbose") verbose++;
    else if (arg === "--json" || arg === "--plain") continue;
    else if (flag === "--manifest" || flag === "--parallel") {
      const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
      if (value === undefined || value === "" || value.startsWith("-")) return undefined;
      if (flag === "--manifest") manifest = value;
      else if (/^\d+$/.test(value)) parallel = Number(value);
      else return undefined;
    } else return undefined;
  }
  let limit: number;
  try {
    limit = resolveParallel(parallel, env);
  } catch {
    return undefined;
  }
  const { serveStdio } = await import("./stdio.ts");
  const location = locationOnFirstUse(cwd, manifest);
  const gateway = await makeGateway(location, env, {});
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once("SIGINT", onSigint);
  process.once("SIGTERM", onSigint);
  const stopResident = residentSoon(location, pkg.version, logToStderr);
  try {
    await serveStdio(
      {
        get cwd() {
          return location.cwd;
        },
        get manifest() {
          return location.manifest;
        },
        gateway,
        scheduler: new PermitScheduler(limit),
        env,
        version: pkg.version,
        log: logToStderr,
        debug: (level, m) => {
          if (level <= verbose) stderr.write(`grex: ${m}\n`);
        },
      },
      abort.signal,
    );
  } finally {
    process.off("SIGINT", onSigint);
    process.off("SIGTERM", onSigint);
    await stopResident();
    await gateway.close();
  }
  return 0;
}
