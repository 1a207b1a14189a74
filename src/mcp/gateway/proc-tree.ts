// Stopping a child server and everything it started. Each stdio child runs in
// its own session and process group (spawned detached), so one signal to the
// group reaches every process that stayed in it. A descendant that left the
// group (setsid, or its own process group) is found by walking /proc for
// processes whose parent chain leads to the child — while that chain exists.
// What this cannot reach: a process whose parent exited before the stop and
// which also left the group (a daemon that double-forks after setsid), and
// anything when /proc is missing (then only the group is signalled).
import { readdirSync, readFileSync } from "node:fs";

interface ProcEntry {
  ppid: number;
  /** Kernel start time (clock ticks since boot): tells a reused pid apart. */
  start: string;
}

function readStat(pid: number): ProcEntry | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name is in parentheses and may contain spaces: fields start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { ppid: Number(fields[1]), start: fields[19] ?? "" };
  } catch {
    return undefined;
  }
}

/** Every live descendant of `root` (children, their children, …) with its start time; empty without /proc. */
export function descendants(root: number): Map<number, string> {
  const children = new Map<number, number[]>();
  const starts = new Map<number, string>();
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return new Map();
  }
  for (const name of names) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const pid = Number(name);
    const e = readStat(pid);
    if (!e) continue;
    starts.set(pid, e.start);
    const list = children.get(e.ppid);
    if (list) list.push(pid);
    else children.set(e.ppid, [pid]);
  }
  const out = new Map<number, string>();
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.pop() as number;
    for (const child of children.get(pid) ?? []) {
      if (out.has(child)) continue;
      out.set(child, starts.get(child) ?? "");
      queue.push(child);
    }
  }
  return out;
}

const signal = (pid: number, sig: NodeJS.Signals) => {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already (ESRCH), or not ours to signal
  }
};

/** Signal the child's process group and the given descendants still running as the same processes. */
export function signalTree(leader: number, tree: Map<number, string>, sig: NodeJS.Signals): void {
  signal(-leader, sig);
  for (const [pid, start] of tree) {
    if (readStat(pid)?.start === start) signal(pid, sig);
  }
}
