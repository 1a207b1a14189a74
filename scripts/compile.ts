// How grex becomes one binary, in one place for `npm run build`,
// scripts/release.ts and the benchmarks: the flags and the entry point.
//   bun scripts/compile.ts [outfile]   (default dist/grex)
import { join } from "node:path";

const repo = join(import.meta.dir, "..");

/**
 * JavaScriptCore's tier-up thresholds, scaled, that a compiled grex starts
 * with. A one-shot command (`status`, `ls`) runs its code a few hundred times
 * at most, and compiling that code on a 2-core machine cost more than it
 * saved: `status` on 100 packs went from about 21 to 18 ms. A process that
 * stays (the MCP server) goes back to the normal policy once it is
 * interactive (mcp/jit.ts). Measured in docs/benchmarks.md.
 */
export const JIT_POLICY = 10;

/**
 * The flags every compiled binary of the project is built with (benchmarks'
 * baselines included). By default a compiled Bun program still reads `.env`
 * (into its environment) and `bunfig.toml` (whose `preload` runs code) from
 * the working directory, and grex often runs inside a pack, someone else's
 * files: it reads neither.
 */
export const COMPILE_FLAGS = [
  "--compile",
  "--minify",
  "--bytecode",
  "--format=esm",
  "--splitting",
  "--no-compile-autoload-dotenv",
  "--no-compile-autoload-bunfig",
  `--compile-jit-policy=${JIT_POLICY}`,
];

export const GREX_ENTRY = join(repo, "src", "cli", "main.ts");

/**
 * Worker threads' modules, compiled in as entry points of their own: the
 * binary names each by its path under src/ (file-writer.ts starts its worker
 * by that name).
 */
export const WORKER_ENTRIES = [join(repo, "src", "core", "git", "worktree", "file-writer-worker.ts")];

/** The `bun build` command that compiles grex into `outfile` (for `target`, or this machine). */
export function grexBuildCommand(outfile: string, target?: string): string[] {
  return [process.execPath, "build", ...COMPILE_FLAGS, ...(target ? [`--target=${target}`] : []), GREX_ENTRY, ...WORKER_ENTRIES, "--outfile", outfile];
}

if (import.meta.main) {
  const build = Bun.spawnSync(grexBuildCommand(process.argv[2] ?? join(repo, "dist", "grex")), { stdout: "inherit", stderr: "inherit" });
  process.exit(build.exitCode ?? 1);
}
