// Shared pieces of the action engine's unit tests.
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import type { Brackets, RunOptions } from "../../src/core/actions/executor.ts";
import type { PackState, StepResult } from "../../src/core/actions/types.ts";

/** Brackets that record nothing (the executor's manifest hooks are tested elsewhere). */
export const noHooks: Brackets = { onStarted: async () => {}, onCompleted: async () => {}, onHalted: async () => {} };

/** Every path under `dir` with kind, mode and content (or link target): equal snapshots = identical trees. */
export function modeSnapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const p = join(dir, r);
      const st = lstatSync(p);
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isSymbolicLink()) out[r] = `link:${readlinkSync(p)}`;
      else if (st.isDirectory()) {
        out[r] = `dir:${mode}`;
        walk(r);
      } else out[r] = `file:${mode}:${readFileSync(p, "utf8")}`;
    }
  };
  walk("");
  return out;
}

/** The state as a later process would load it from its JSON file. */
export const persisted = (s: PackState): PackState => JSON.parse(JSON.stringify(s)) as PackState;

export const results = (r: { steps: Array<{ result: StepResult }> }): StepResult[] => r.steps.map((s) => s.result);

/** Run options for a sandboxed pack: HOME and the pack dir given, a fixed clock, no process env touched. */
export function sandboxRunOptions(pack: string, home: string, state: PackState, extra: Partial<RunOptions> = {}): RunOptions {
  return {
    packId: "p",
    packDir: pack,
    dryRun: false,
    env: { HOME: home, PATH: process.env.PATH },
    signal: new AbortController().signal,
    state,
    processEnv: {},
    now: () => new Date("2030-01-02T03:04:05.678Z"),
    ...extra,
  };
}
