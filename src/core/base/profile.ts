// Phase timers for the benchmarks (bench/sync.ts), off unless GREX_PROFILE
// names a file: then each timed phase adds its wall time (summed over packs
// working at once, so a phase's total can exceed the run's wall time) and a
// count, and at exit the process writes them there as one JSON document with
// its own wall time and CPU time. Off, every hook is one boolean test.
// Not a user feature: docs/benchmarks.md describes it for whoever reads a
// benchmark; nothing a user sees changes with it.
import { writeFileSync } from "node:fs";

const target = process.env.GREX_PROFILE;
/** True when GREX_PROFILE names a file to write the phase times to. */
export const profiling = target !== undefined && target !== "";

const phases = new Map<string, { ms: number; n: number }>();

/** A start mark for `phaseEnd` (0 when profiling is off, never read then). */
export function phaseStart(): number {
  return profiling ? performance.now() : 0;
}

/** Add the time since `since` (a `phaseStart` mark) to `name`. */
export function phaseEnd(name: string, since: number): void {
  if (!profiling) return;
  const ms = performance.now() - since;
  const p = phases.get(name);
  if (p) {
    p.ms += ms;
    p.n++;
  } else phases.set(name, { ms, n: 1 });
}

/** Time an async step as phase `name` (the step alone when profiling is off). */
export async function timePhase<T>(name: string, step: () => Promise<T>): Promise<T> {
  if (!profiling) return step();
  const t0 = performance.now();
  try {
    return await step();
  } finally {
    phaseEnd(name, t0);
  }
}

/** The document written at exit: wall and CPU time of the whole process, then each phase's summed time and count. */
export function profileDocument(): { wall_ms: number; cpu_user_ms: number; cpu_system_ms: number; phases: Record<string, { ms: number; n: number }> } {
  const cpu = process.cpuUsage();
  const out: Record<string, { ms: number; n: number }> = {};
  for (const [name, p] of [...phases].sort(([a], [b]) => a.localeCompare(b))) out[name] = { ms: Math.round(p.ms * 10) / 10, n: p.n };
  return { wall_ms: Math.round(performance.now() * 10) / 10, cpu_user_ms: Math.round(cpu.user / 100) / 10, cpu_system_ms: Math.round(cpu.system / 100) / 10, phases: out };
}

if (profiling) {
  process.on("exit", () => {
    try {
      writeFileSync(target as string, `${JSON.stringify(profileDocument())}\n`);
    } catch {
      // A benchmark aid: a file that cannot be written changes nothing else.
    }
  });
}
