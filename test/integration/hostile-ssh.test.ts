// The hostile trees over a real ssh URL: an sshd of our own on 127.0.0.1
// (a temp config, host and client keys), started and stopped by this file.
// The git program transfers; grex's checkout refuses. Skipped where no sshd
// is installed (.ci/run installs it where it can).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { commitTree, dir, emptyRepo, file, link, rawTree } from "../helpers/crafted-tree.ts";
import { git, snapshot, TestWorkspace } from "../helpers/workspace.ts";

const SSHD = "/usr/sbin/sshd";
const HAVE_SSHD = existsSync(SSHD);
/** The login name, from the system (the test setup gives the process a private HOME and environment). */
const USER = Bun.spawnSync(["id", "-un"], { stdout: "pipe" }).stdout.toString().trim();
const t = new TestWorkspace("grex-hostile-ssh-");
let sshd: ReturnType<typeof Bun.spawn> | null = null;
let port = 0;
let savedSshCommand: string | undefined;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

async function startSshd(): Promise<boolean> {
  if (!existsSync(SSHD)) return false;
  const keys = join(t.root, "ssh");
  mkdirSync(keys, { mode: 0o700 });
  for (const k of ["host", "client"]) {
    const r = Bun.spawnSync(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", join(keys, k)]);
    if (r.exitCode !== 0) return false;
  }
  Bun.spawnSync(["cp", join(keys, "client.pub"), join(keys, "authorized_keys")]);
  chmodSync(join(keys, "authorized_keys"), 0o600);
  // Privilege separation needs its empty directory when sshd starts as root.
  if (process.getuid?.() === 0 && !existsSync("/run/sshd")) mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
  port = await freePort();
  writeFileSync(
    join(keys, "sshd_config"),
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      `HostKey ${join(keys, "host")}`,
      `AuthorizedKeysFile ${join(keys, "authorized_keys")}`,
      `PidFile ${join(keys, "sshd.pid")}`,
      `AllowUsers ${USER}`,
      "PermitRootLogin prohibit-password",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "UsePAM no",
      "StrictModes no",
      "",
    ].join("\n"),
  );
  sshd = Bun.spawn([SSHD, "-D", "-e", "-f", join(keys, "sshd_config")], { stdout: "ignore", stderr: "pipe" });
  savedSshCommand = process.env.GIT_SSH_COMMAND;
  process.env.GIT_SSH_COMMAND = `ssh -i ${join(keys, "client")} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR`;
  // Ready when a login runs a command.
  for (let i = 0; i < 20; i++) {
    if (sshd.exitCode !== null) break;
    const probe = Bun.spawn(["sh", "-c", `${process.env.GIT_SSH_COMMAND} -o ConnectTimeout=5 -p ${port} ${USER}@127.0.0.1 true`], { stdout: "ignore", stderr: "pipe" });
    const [code, err] = await Promise.all([probe.exited, new Response(probe.stderr).text()]);
    if (code === 0) return true;
    if (process.env.GREX_SSH_DEBUG) console.error("ssh probe:", err);
    await Bun.sleep(100);
  }
  if (process.env.GREX_SSH_DEBUG && sshd.exitCode !== null) console.error(await new Response(sshd.stderr as ReadableStream).text());
  return false;
}

let ready = false;
beforeAll(async () => {
  ready = await startSshd();
  if (ready) expect((await t.grex("init")).code).toBe(0);
}, 120_000);
afterAll(async () => {
  if (sshd) {
    sshd.kill("SIGTERM");
    await sshd.exited;
  }
  if (savedSshCommand === undefined) delete process.env.GIT_SSH_COMMAND;
  else process.env.GIT_SSH_COMMAND = savedSshCommand;
  t.cleanup();
});

const sshUrl = (repo: string) => `ssh://${USER}@127.0.0.1:${port}${repo}`;

describe("hostile trees over ssh", () => {
  test.skipIf(!HAVE_SSHD)("a fresh add onto a link and a directory of the same name is refused; nothing changes", async () => {
    expect(ready).toBe(true);
    const repo = emptyRepo(join(t.upstream, "fresh.git"));
    const commit = commitTree(repo, rawTree(repo, [file(repo, "README", "hi\n"), link(repo, "h", "../../home"), dir(repo, "h", [dir(repo, ".config", [file(repo, "x", "planted\n")])])]), "hostile");
    const home = snapshot(t.home);
    const r = await t.grex("add", sshUrl(repo), "fresh");
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(commit.slice(0, 7));
    expect(r.stderr).toContain('"h"');
    expect(existsSync(join(t.ws, "fresh"))).toBe(false);
    expect(readdirSync(t.ws).filter((n) => n.includes("grex-clone"))).toEqual([]);
    expect(snapshot(t.home)).toEqual(home);
  });

  test.skipIf(!HAVE_SSHD)("a sync onto git~1/hooks is refused; HEAD, work tree and hooks stay", async () => {
    expect(ready).toBe(true);
    const repo = emptyRepo(join(t.upstream, "later.git"));
    const readme = file(repo, "README", "hi\n");
    commitTree(repo, rawTree(repo, [readme]), "one");
    expect((await t.grex("add", sshUrl(repo), "later")).code).toBe(0);
    const wt = join(t.ws, "later");
    const head = git(wt, "rev-parse", "HEAD");
    const commit = commitTree(repo, rawTree(repo, [readme, dir(repo, "git~1", [dir(repo, "hooks", [file(repo, "post-checkout", "#!/bin/sh\necho pwned\n", "100755")])])]), "hostile");
    const hooks = snapshot(join(wt, ".git", "hooks"));
    const r = await t.grex("sync");
    expect(r.code).toBe(4);
    expect(r.stderr + r.stdout).toContain(commit.slice(0, 7));
    expect(r.stderr + r.stdout).toContain('"git~1"');
    expect(git(wt, "rev-parse", "HEAD")).toBe(head);
    expect(existsSync(join(wt, "git~1"))).toBe(false);
    expect(snapshot(join(wt, ".git", "hooks"))).toEqual(hooks);
    expect(git(wt, "status", "--porcelain")).toBe("");
  });
});
