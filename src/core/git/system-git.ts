// ssh:// and scp-style URLs: isomorphic-git cannot speak SSH, so the transfer
// is delegated to the system `git`; moving to the ref reuses the in-process logic.
import { GrexError, packOpError, throwIfAborted } from "../errors.ts";
import type { GitBackend } from "./backend.ts";
import { cloneAtomically, inProcess, moveTo } from "./in-process.ts";
import { readHeadSync } from "./backend.ts";
import { readFileSync } from "node:fs";
import { join } from "node:path";

async function runGit(args: string[], signal: AbortSignal, cwd?: string): Promise<void> {
  if (!Bun.which("git")) {
    throw new GrexError("pack_op", "ssh URLs need the git program, which is not on PATH; install git or use an https:// URL.");
  }
  const proc = Bun.spawn(["git", ...args], { cwd, stdin: "ignore", stdout: "ignore", stderr: "pipe", env: { ...process.env, GIT_TERMINAL_PROMPT: "0" } });
  const kill = () => proc.kill();
  signal.addEventListener("abort", kill, { once: true });
  try {
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    throwIfAborted(signal);
    if (code !== 0) {
      const last = stderr.trim().split("\n").pop() ?? `exit ${code}`;
      throw packOpError(`git ${args[0]} failed (${last.replace(/\.$/, "")}); check the URL and your SSH access.`);
    }
  } finally {
    signal.removeEventListener("abort", kill);
  }
}

function remoteDefault(dir: string): string | null {
  try {
    const head = readFileSync(join(dir, ".git", "refs", "remotes", "origin", "HEAD"), "utf8").trim();
    return head.startsWith("ref: refs/remotes/origin/") ? head.slice("ref: refs/remotes/origin/".length) : null;
  } catch {
    return null;
  }
}

export const systemGit: Pick<GitBackend, "clone" | "update"> = {
  clone(url, dir, { ref, signal }) {
    return cloneAtomically(
      dir,
      async (tmp) => {
        await runGit(["clone", "--quiet", "--no-checkout", "--origin", "origin", url, tmp], signal);
        return moveTo(tmp, url, ref, remoteDefault(tmp), true);
      },
      signal,
    );
  },
  async update(dir, url, { ref, signal }) {
    const before = readHeadSync(dir) ?? (await inProcess.head(dir));
    await runGit(["fetch", "--quiet", "--tags", "--prune", "origin"], signal, dir);
    const after = await moveTo(dir, url, ref, remoteDefault(dir), false);
    return { before, after };
  },
};
