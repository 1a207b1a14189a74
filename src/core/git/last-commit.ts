// HEAD's commit as `status --long` shows it: short sha, committer date and
// subject (the first line of the message, as git's %s shows a one-line
// subject). Read from the object store; null when it cannot be read.
import { ObjectStore } from "./objects/object-store.ts";

export interface LastCommit {
  sha: string;
  /** Committer date, ISO 8601 UTC. */
  date: string;
  subject: string;
}

export function lastCommit(gitdir: string, sha: string): LastCommit | null {
  const store = new ObjectStore(gitdir);
  try {
    const o = store.read(sha);
    if (o?.type !== "commit") return null;
    const text = o.data.toString("utf8");
    const blank = text.indexOf("\n\n");
    const headers = blank === -1 ? text : text.slice(0, blank);
    const committer = /^committer .* (\d+) [+-]\d{4}$/m.exec(headers);
    const message = blank === -1 ? "" : text.slice(blank + 2);
    const subject = (message.split("\n\n")[0] ?? "").replace(/\s*\n\s*/g, " ").trim();
    return { sha, date: committer ? new Date(Number(committer[1]) * 1000).toISOString() : "", subject };
  } catch {
    return null;
  } finally {
    store.close();
  }
}
