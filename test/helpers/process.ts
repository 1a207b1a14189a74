// Whether a process is still running, for tests that check children are reaped.
import { readFileSync } from "node:fs";

/** Whether `pid` is a live process (a zombie waiting to be reaped counts as dead). */
export function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true; // no /proc: kill(0) is all we have
  }
}
