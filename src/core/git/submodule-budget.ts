// What one `add` or `sync` may spend on submodules, whatever a pack's history
// holds: a tree that fans out (three gitlinks per commit to the same
// repository, nine levels down) would otherwise make thousands of clones. The
// budget is per call (keyed by the call's AbortSignal, which `add` and the
// sync engine share), counts every submodule cloned or moved, the bytes of
// the object stores those clones brought, and the wall time since the first
// one; each limit is a documented default that an environment variable
// changes, and the error that fires names it.
//
// Also here: git's `protocol.file.allow=user` default for submodule URLs. A
// submodule may not be fetched from a local repository (a path, or a `../x`
// URL resolved against a pack added from a path) unless the user's own git
// config says `protocol.file.allow = always` (or `protocol.allow = always`),
// as `git submodule update` decides.
import { gitdirOf, objectsDir } from "./layout/layout.ts";
import * as fs from "node:fs";
import { join } from "node:path";
import { packOpError } from "../base/errors.ts";
import { LayeredConfig } from "./refs/config.ts";
import { type LimitSpec, limitFromEnv, showBytes } from "./objects/limits.ts";

const GiB = 1024 * 1024 * 1024;

export const SUBMODULE_LIMITS = {
  count: { env: "GREX_MAX_SUBMODULES", def: 500, unit: "count" },
  bytes: { env: "GREX_MAX_SUBMODULE_BYTES", def: 4 * GiB, unit: "bytes" },
  seconds: { env: "GREX_MAX_SUBMODULE_TIME", def: 600, unit: "seconds" },
} as const satisfies Record<string, LimitSpec>;

type Env = Record<string, string | undefined>;

export class SubmoduleBudget {
  private count = 0;
  private bytes = 0;
  private readonly started = Date.now();
  readonly max: { count: number; bytes: number; seconds: number };

  constructor(env: Env) {
    this.max = {
      count: limitFromEnv(env, SUBMODULE_LIMITS.count),
      bytes: limitFromEnv(env, SUBMODULE_LIMITS.bytes),
      seconds: limitFromEnv(env, SUBMODULE_LIMITS.seconds),
    };
  }

  /** Before cloning or moving one more submodule: refuses when the count or the time is spent. */
  take(where: string): void {
    const { env: countVar } = SUBMODULE_LIMITS.count;
    if (this.count + 1 > this.max.count) {
      throw packOpError(
        `${where}: one more submodule would pass the limit of ${this.max.count} submodules cloned or moved per add or sync (${countVar}); nothing further was cloned — set ${countVar} higher if the pack really needs that many.`,
        { limit: countVar, value: this.max.count },
      );
    }
    const secs = (Date.now() - this.started) / 1000;
    const { env: timeVar } = SUBMODULE_LIMITS.seconds;
    if (secs > this.max.seconds) {
      throw packOpError(
        `${where}: submodules have taken ${Math.round(secs)} s, past the limit of ${this.max.seconds} s per add or sync (${timeVar}); nothing further was cloned — set ${timeVar} higher if the pack really needs that long.`,
        { limit: timeVar, value: this.max.seconds },
      );
    }
    this.count++;
  }

  /** After a clone: its object store counts against the byte limit. */
  spent(where: string, subDir: string): void {
    const gitdir = gitdirOf(subDir);
    if (gitdir !== null) this.bytes += bytesUnder(objectsDir(gitdir));
    const { env: bytesVar } = SUBMODULE_LIMITS.bytes;
    if (this.bytes > this.max.bytes) {
      throw packOpError(
        `${where}: submodules have brought ${showBytes(this.bytes)}, past the limit of ${showBytes(this.max.bytes)} per add or sync (${bytesVar}); nothing further was cloned — set ${bytesVar} higher if the pack really needs that much.`,
        { limit: bytesVar, value: this.max.bytes },
      );
    }
  }
}

const budgets = new WeakMap<AbortSignal, SubmoduleBudget>();

/** The budget of the call that owns `signal` (made on first use). */
export function budgetFor(signal: AbortSignal, env: Env): SubmoduleBudget {
  let b = budgets.get(signal);
  if (!b) {
    b = new SubmoduleBudget(env);
    budgets.set(signal, b);
  }
  return b;
}

function bytesUnder(dir: string): number {
  let total = 0;
  let names: fs.Dirent[];
  try {
    names = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const d of names) {
    const p = join(dir, d.name);
    if (d.isDirectory()) total += bytesUnder(p);
    else if (d.isFile()) {
      try {
        total += fs.lstatSync(p).size;
      } catch {
        // gone meanwhile
      }
    }
  }
  return total;
}

/** Whether the user's own git config lets submodules use the file transport (`protocol.file.allow=always`, as in git). */
export function fileProtocolAllowed(env: Env): boolean {
  const cfg = LayeredConfig.load(null, env);
  const v = cfg.get("protocol", "file", "allow") ?? cfg.get("protocol", null, "allow");
  return v !== null && v.toLowerCase() === "always";
}
