// The long git work in flight (see core/base/activity.ts), as people read it:
// one phrase per pack (`receiving 1,204/9,000 objects (13%), 2.1 MiB, 1.3
// MiB/s`) and how far the work in flight has got, for the CLI's progress line
// and MCP progress notifications alike.
import type { ActivityReport } from "../core/base/activity.ts";
import { showBytes } from "../core/git/objects/limits.ts";

/** The rate is measured over windows of at least this long. */
const RATE_WINDOW_MS = 1000;

interface Entry {
  report: ActivityReport;
  rateAt: number;
  rateBytes: number;
  rate: number | null;
}

const count = (n: number) => n.toLocaleString("en-US");
const percent = (done: number, total: number) => (total > 0 ? ` (${Math.floor((done * 100) / total)}%)` : "");

function phrase(e: Entry): string {
  const r = e.report;
  const of = r.done !== undefined && r.total !== undefined ? `${count(r.done)}/${count(r.total)}` : r.done !== undefined ? count(r.done) : "";
  if (r.phase === "receiving") {
    // Before the pack's header only keep-alives arrive: the server is still counting and compressing.
    if (!of) return "waiting for the server to send the pack";
    const parts = [`receiving ${of} objects${percent(r.done ?? 0, r.total ?? 0)}`];
    if (r.bytes !== undefined) parts.push(showBytes(r.bytes));
    if (e.rate !== null) parts.push(`${showBytes(Math.round(e.rate))}/s`);
    return parts.join(", ");
  }
  if (r.phase === "resolving deltas") return `resolving deltas ${of}${percent(r.done ?? 0, r.total ?? 0)}`;
  return `checking out ${of} files${percent(r.done ?? 0, r.total ?? 0)}`;
}

/** Where in a pack's fetch and checkout a phase stands, 0..1 (receiving is most of the wait, then deltas, then files). */
const PHASES: Record<ActivityReport["phase"], [number, number]> = {
  receiving: [0, 0.6],
  "resolving deltas": [0.6, 0.8],
  "checking out": [0.8, 0.99],
};

export class ActivityBoard {
  private readonly entries = new Map<string, Entry>();

  /**
   * Merges a report (fields left out keep their value within a phase); null
   * ends the subject's work. True when a phase starts (or its count first
   * becomes known): worth showing at once, whatever the throttle says.
   */
  update(subject: string, report: ActivityReport | null, now = Date.now()): boolean {
    if (report === null) {
      this.entries.delete(subject);
      return false;
    }
    const was = this.entries.get(subject);
    const same = was !== undefined && was.report.phase === report.phase;
    const merged: ActivityReport = same ? { ...was.report, ...report } : { ...report };
    // The rate counts from the pack's first object: the keep-alives before it say nothing of the speed.
    const fresh = !same || (was.report.done === undefined && merged.done !== undefined);
    const e: Entry = fresh ? { report: merged, rateAt: now, rateBytes: merged.bytes ?? 0, rate: null } : { ...was, report: merged };
    if (merged.bytes !== undefined && now - e.rateAt >= RATE_WINDOW_MS) {
      e.rate = ((merged.bytes - e.rateBytes) * 1000) / (now - e.rateAt);
      e.rateAt = now;
      e.rateBytes = merged.bytes;
    }
    this.entries.set(subject, e);
    return fresh;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Up to `most` subjects' phrases (`api: receiving …`), then `+N more`; "" when nothing is in flight. */
  text(most = 2): string {
    const out = [...this.entries].slice(0, most).map(([subject, e]) => (subject ? `${subject}: ${phrase(e)}` : phrase(e)));
    if (this.entries.size > most) out.push(`+${this.entries.size - most} more`);
    return out.join("; ");
  }

  /** How far the work in flight is, on average, 0..0.99: added to the count of packs done, it never reaches the next. */
  fraction(): number {
    if (this.entries.size === 0) return 0;
    let sum = 0;
    for (const { report: r } of this.entries.values()) {
      const [from, to] = PHASES[r.phase];
      const part = r.done !== undefined && r.total !== undefined && r.total > 0 ? Math.min(1, r.done / r.total) : 0;
      sum += from + (to - from) * part;
    }
    return Math.min(0.99, sum / this.entries.size);
  }
}
