// A git backend call run in a child process of its own, measured: how far its
// resident memory rose above where it started (VmHWM − VmRSS at the start, in
// bytes), so a test bounds one operation's peak, not the test runner's.
import { expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const BACKEND = join(import.meta.dir, "..", "..", "src", "core", "git", "backend.ts");

/**
 * Run `await backendFor(<url>).<call>` in a fresh process (`call` is the
 * method call's source, e.g. `clone("src", "dest", { ref: null, signal })`,
 * with `signal` in scope); the script is written into `dir` as `<name>.ts`.
 */
export function backendPeakGrowth(dir: string, name: string, url: string, call: string): number {
  const script = join(dir, `${name}.ts`);
  writeFileSync(
    script,
    [
      `import { readFileSync } from "node:fs";`,
      `const rss = (k: string) => Number(new RegExp(k + ":\\\\s+(\\\\d+) kB").exec(readFileSync("/proc/self/status", "utf8"))?.[1]);`,
      `const { backendFor } = await import(${JSON.stringify(BACKEND)});`,
      `const signal = new AbortController().signal;`,
      `const start = rss("VmRSS");`,
      `await backendFor(${JSON.stringify(url)}).${call};`,
      `console.log(JSON.stringify({ start, peak: rss("VmHWM") }));`,
    ].join("\n"),
  );
  const run = Bun.spawnSync([process.execPath, script], { cwd: dir });
  expect(run.stderr.toString()).toBe("");
  expect(run.exitCode).toBe(0);
  const { start, peak } = JSON.parse(run.stdout.toString()) as { start: number; peak: number };
  return (peak - start) * 1024;
}
