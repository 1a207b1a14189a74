// Lazy loaders for isomorphic-git and its HTTP client: only the operations
// that really need them pay for loading them (`grex ls` never does).
import type { HttpClient } from "isomorphic-git";

export type Git = typeof import("isomorphic-git").default;

let gitPromise: Promise<Git> | null = null;

export function loadGit(): Promise<Git> {
  gitPromise ??= import("isomorphic-git").then((m) => m.default);
  return gitPromise;
}

/** The Node HTTP client, with every request tied to `signal` so cancellation aborts the transfer. */
export async function loadHttp(signal: AbortSignal): Promise<HttpClient> {
  const http = (await import("isomorphic-git/http/node")).default;
  return { request: (req) => http.request({ ...req, signal }) };
}
