// Test workspaces: a temp root with a fake HOME, upstream repos built from
// test/fixtures, and the grex CLI run in process (runCli) or as a process.
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli/run.ts";

export const FIXTURES = join(import.meta.dir, "..", "fixtures");
export const GREX_MAIN = join(import.meta.dir, "..", "..", "src", "cli", "main.ts");

export const GIT_ENV = {
  GIT_AUTHOR_NAME: "grex test",
  GIT_AUTHOR_EMAIL: "test@example.invalid",
  GIT_COMMITTER_NAME: "grex test",
  GIT_COMMITTER_EMAIL: "test@example.invalid",
  GIT_AUTHOR_DATE: "2026-01-01T00:00:00Z",
  GIT_COMMITTER_DATE: "2026-01-01T00:00:00Z",
  GIT_CONFIG_NOSYSTEM: "1",
};

export function git(cwd: string, ...args: string[]): string {
  const r = Bun.spawnSync(["git", ...args], { cwd, env: { ...process.env, ...GIT_ENV }, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")} failed in ${cwd}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as one JSON document (when --json was passed). */
  json: Record<string, unknown> & { [k: string]: unknown };
}

export class TestWorkspace {
  readonly root: string;
  readonly home: string;
  readonly ws: string;
  readonly upstream: string;

  constructor(prefix = "grex-test-") {
    this.root = mkdtempSync(join(tmpdir(), prefix));
    this.home = join(this.root, "home");
    this.ws = join(this.root, "ws");
    this.upstream = join(this.root, "upstream");
    for (const d of [this.home, this.ws, this.upstream]) mkdirSync(d, { recursive: true });
  }

  get env(): Record<string, string | undefined> {
    return { ...process.env, ...GIT_ENV, HOME: this.home, GREX_PARALLEL: "4" };
  }

  /** An upstream git repo made from test/fixtures/<name> (or given files). */
  repo(name: string, files?: Record<string, string>): string {
    const dir = join(this.upstream, name);
    if (files) {
      for (const [rel, content] of Object.entries(files)) {
        mkdirSync(join(dir, rel, ".."), { recursive: true });
        writeFileSync(join(dir, rel), content);
      }
    } else {
      cpSync(join(FIXTURES, name), dir, { recursive: true });
    }
    git(dir, "init", "-q", "-b", "main");
    git(dir, "add", "-A");
    git(dir, "commit", "-q", "-m", `${name}: initial`);
    return dir;
  }

  commit(repoDir: string, files: Record<string, string>, message = "change"): string {
    for (const [rel, content] of Object.entries(files)) {
      mkdirSync(join(repoDir, rel, ".."), { recursive: true });
      writeFileSync(join(repoDir, rel), content);
    }
    git(repoDir, "add", "-A");
    git(repoDir, "commit", "-q", "-m", message);
    return git(repoDir, "rev-parse", "HEAD");
  }

  /** Run the CLI in process in the workspace. */
  grex(...argv: string[]): Promise<RunResult> {
    return this.grexAt(this.ws, argv);
  }

  /** Run the CLI in process in `cwd` (another workspace, a task workspace), with this workspace's environment or `env`. */
  async grexAt(cwd: string, argv: string[], env: Record<string, string | undefined> = this.env): Promise<RunResult> {
    let stdout = "";
    let stderr = "";
    const code = await runCli(argv, {
      cwd,
      env,
      stdout: (t) => {
        stdout += t;
      },
      stderr: (t) => {
        stderr += t;
      },
      stdoutTTY: false,
      stderrTTY: false,
    });
    let json: RunResult["json"] = {};
    if (argv.includes("--json") && stdout.trim() !== "") json = JSON.parse(stdout);
    return { code, stdout, stderr, json };
  }

  /** Run the CLI as a real process. */
  spawnGrex(argv: string[], opts: { cwd?: string } = {}) {
    return Bun.spawn([process.execPath, GREX_MAIN, ...argv], {
      cwd: opts.cwd ?? this.ws,
      env: this.env,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
  }

  cleanup(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** Every path under `dir` with its kind and content (or link target): equal snapshots = identical trees. */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(dir)) return out;
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const p = join(dir, r);
      const st = lstatSync(p);
      if (st.isSymbolicLink()) out[r] = `link:${readlinkSync(p)}`;
      else if (st.isDirectory()) {
        out[r] = "dir";
        walk(r);
      } else out[r] = `file:${readFileSync(p, "utf8")}`;
    }
  };
  walk("");
  return out;
}

/** snapshot() without grex's runtime state (.grex/.state: locks, caches), which a dry run may change. */
export function userSnapshot(dir: string): Record<string, string> {
  return Object.fromEntries(Object.entries(snapshot(dir)).filter(([p]) => p !== ".grex/.state" && !p.startsWith(".grex/.state/")));
}
