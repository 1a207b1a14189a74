// An operation of grex's run in a child process of its own, measured: how far
// its resident memory rose above where it started (VmHWM − VmRSS at the start,
// in bytes), so a test bounds one operation's peak, not the test runner's.
import { expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const SRC = join(import.meta.dir, "..", "..", "src");

/**
 * Run `await <call>` in a fresh process, after `const { <names> } = await
 * import(<module under src/>)` and with `signal` (an AbortSignal) in scope;
 * the script is written into `dir` as `<name>.ts`. Returns the peak's growth in bytes.
 */
export function peakGrowth(dir: string, name: string, module: string, names: string, call: string): number {
  const script = join(dir, `${name}.ts`);
  writeFileSync(
    script,
    [
      `import { readFileSync } from "node:fs";`,
      `const rss = (k: string) => Number(new RegExp(k + ":\\\\s+(\\\\d+) kB").exec(readFileSync("/proc/self/status", "utf8"))?.[1]);`,
      `const { ${names} } = await import(${JSON.stringify(join(SRC, module))});`,
      `const signal = new AbortController().signal;`,
      `const start = rss("VmRSS");`,
      `await ${call};`,
      `console.log(JSON.stringify({ start, peak: rss("VmHWM") }));`,
    ].join("\n"),
  );
  const run = Bun.spawnSync([process.execPath, script], { cwd: dir });
  expect(run.stderr.toString()).toBe("");
  expect(run.exitCode).toBe(0);
  const { start, peak } = JSON.parse(run.stdout.toString()) as { start: number; peak: number };
  expect(Number.isFinite(start) && Number.isFinite(peak)).toBe(true);
  return (peak - start) * 1024;
}

/** `peakGrowth` of `await backendFor(<url>).<call>` (e.g. `clone("src", "dest", { ref: null, signal })`). */
export function backendPeakGrowth(dir: string, name: string, url: string, call: string): number {
  return peakGrowth(dir, name, "core/git/backend.ts", "backendFor", `backendFor(${JSON.stringify(url)}).${call}`);
}
