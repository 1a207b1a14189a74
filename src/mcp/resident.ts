// Resident status while `grex serve` runs (stdio or HTTP): the server installs
// a ResidentStatus as this process's dirty oracle (so its own `status` tool
// answers from watched packs), and offers the same answers to a `grex status`
// run in the workspace, over a Unix socket in `.grex/.state/` (mode 0600 in a
// directory only its user can write to: resident-wire.ts has the protocol).
// It is an accelerator only: no socket (another server holds it, the path is
// too long, the workspace does not exist yet) means the CLI scans itself.
import { chmodSync, existsSync, lstatSync, mkdirSync, realpathSync, rmSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { toGrexError } from "../core/base/errors.ts";
import { backendFor, workTreeGitdir } from "../core/git/backend.ts";
import { type DirtyQuery, setDirtyOracle } from "../core/git/worktree/dirty-oracle.ts";
import { ResidentStatus } from "../core/git/worktree/resident-status.ts";
import { envFingerprint, HEARTBEAT_MS, residentSocketPath, SOCKET_PATH_MAX } from "../core/git/worktree/resident-wire.ts";

export interface Resident {
  status: ResidentStatus;
  /** The socket path, or null when none is offered (and why). */
  socket: string | null;
  why: string | null;
  stop(): void;
}

let current: Resident | null = null;

/** The running server's resident status, if this process is one (for doctor). */
export function residentOfThisProcess(): Resident | null {
  return current;
}

/** The workspace root a server at `location` serves, or null when there is none yet. */
export function residentRoot(location: { cwd: string; manifest: string | undefined }): string | null {
  if (location.manifest !== undefined) return existsSync(location.manifest) ? dirname(location.manifest) : null;
  return existsSync(join(location.cwd, "grex.jsonl")) ? location.cwd : null;
}

interface Conn {
  buffer: string;
  greeted: boolean;
  heartbeat: ReturnType<typeof setInterval> | null;
}

/** Start resident status for the workspace at `root` (null: no workspace yet, the in-process oracle only). */
export async function startResident(root: string | null, version: string, env: Record<string, string | undefined>, log: (m: string) => void): Promise<Resident> {
  const status = new ResidentStatus();
  setDirtyOracle(status);
  let listener: { stop(closeActive?: boolean): void } | null = null;
  let socket: string | null = null;
  let why: string | null = root === null ? "no workspace here yet" : null;
  let socketIno = 0;
  if (root !== null) {
    const stateDir = join(root, ".grex", ".state");
    const path = residentSocketPath(stateDir);
    const fingerprint = envFingerprint(env);
    let rootReal = root;
    try {
      rootReal = realpathSync(root);
    } catch {
      // keep it as given
    }
    const answer = async (q: DirtyQuery): Promise<boolean> => {
      // Only this workspace's packs, checked the way this process would check them.
      const dir = realpathSync(q.dir);
      if (q.stateDir !== stateDir || dirname(q.statusCache) !== join(stateDir, "status-cache") || !(dir + sep).startsWith(rootReal + sep) || dir === rootReal) {
        throw new Error("not a pack of this server's workspace");
      }
      const gitdir = workTreeGitdir(q.dir);
      if (gitdir === null || gitdir !== q.gitdir) throw new Error("not the git dir this server sees");
      return status.dirty(q, () => backendFor(q.url || q.dir).isDirty(q.dir, { statusCache: q.statusCache, head: q.head ?? undefined, gitdir }));
    };
    const handle = async (c: Conn, line: string, write: (m: unknown) => void) => {
      let msg: { hello?: { version?: unknown; env?: unknown }; id?: unknown; dirty?: DirtyQuery; report?: unknown };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        write({ error: "not JSON" });
        return;
      }
      if (msg.hello !== undefined) {
        const ok = msg.hello.version === version && msg.hello.env === fingerprint;
        c.greeted = ok;
        write(ok ? { hello: true } : { hello: false, why: msg.hello.version !== version ? `the server is grex ${version}` : "the server runs with another git environment" });
        return;
      }
      if (!c.greeted) {
        write({ id: msg.id ?? null, error: "no hello" });
        return;
      }
      try {
        if (msg.report === true) write({ id: msg.id, report: status.report() });
        else if (msg.dirty !== undefined) write({ id: msg.id, dirty: await answer(msg.dirty) });
        else write({ id: msg.id ?? null, error: "unknown request" });
      } catch (e) {
        write({ id: msg.id ?? null, error: toGrexError(e).message });
      }
    };
    if (path.length > SOCKET_PATH_MAX) why = `the socket path ${path} is longer than ${SOCKET_PATH_MAX} bytes`;
    else {
      try {
        mkdirSync(stateDir, { recursive: true, mode: 0o700 });
        // A socket left by a server that died is removed; a live one stays its server's.
        await rmStaleSocket(path);
        const mask = process.umask(0o177);
        try {
          listener = Bun.listen<Conn>({
            unix: path,
            socket: {
              open(s) {
                const heartbeat = setInterval(() => s.write('{"busy":true}\n'), HEARTBEAT_MS);
                heartbeat.unref?.();
                s.data = { buffer: "", greeted: false, heartbeat };
              },
              close(s) {
                if (s.data?.heartbeat) clearInterval(s.data.heartbeat);
              },
              data(s, chunk) {
                s.data.buffer += chunk.toString();
                for (let nl = s.data.buffer.indexOf("\n"); nl >= 0; nl = s.data.buffer.indexOf("\n")) {
                  const line = s.data.buffer.slice(0, nl);
                  s.data.buffer = s.data.buffer.slice(nl + 1);
                  void handle(s.data, line, (m) => {
                    s.write(`${JSON.stringify(m)}\n`);
                  });
                }
              },
            },
          });
        } finally {
          process.umask(mask);
        }
        chmodSync(path, 0o600);
        socketIno = lstatSync(path).ino;
        socket = path;
      } catch (e) {
        why = toGrexError(e).message;
        listener = null;
      }
    }
    if (why !== null) log(`status socket not offered (${why}); grex status scans by itself`);
  }
  const resident: Resident = {
    status,
    socket,
    why,
    stop() {
      listener?.stop(true);
      listener = null;
      if (socket !== null) {
        try {
          if (lstatSync(socket).ino === socketIno) rmSync(socket, { force: true });
        } catch {
          // already gone
        }
      }
      status.close();
      setDirtyOracle(null);
      if (current === resident) current = null;
    },
  };
  current = resident;
  return resident;
}

/** Remove a socket at `path` that no server answers on; throw when a live server holds it. */
async function rmStaleSocket(path: string): Promise<void> {
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(path);
  } catch {
    return;
  }
  if (!st.isSocket()) throw new Error(`${path} exists and is not a socket`);
  const live = await Bun.connect({ unix: path, socket: { data() {} } }).then(
    (s) => {
      s.end();
      return true;
    },
    () => false,
  );
  if (live) throw new Error(`another grex serve already answers on ${path}`);
  rmSync(path, { force: true });
}
