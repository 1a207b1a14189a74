// Which transport a pack URL needs, and the filesystem path of a local one.
import { isAbsolute, resolve } from "node:path";
import { packOpError } from "../../base/errors.ts";
import { controlCharProblem } from "../../base/naming.ts";

export type Transport = "http" | "local" | "ssh";

export function transportOf(url: string): Transport {
  if (/^https?:\/\//i.test(url)) return "http";
  if (/^file:\/\//i.test(url)) return "local";
  // ssh://, git+ssh://, git://…: only the git program speaks these.
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return "ssh";
  // scp-style [user@]host:path — a colon before any slash, as git decides (a "C:" drive is a path).
  const colon = url.indexOf(":");
  const slash = url.search(/[/\\]/);
  if (colon > 1 && (slash < 0 || colon < slash)) return "ssh";
  return "local";
}

/** Absolute filesystem path for a local pack URL (a path or a file:// URL). */
export function localPath(url: string): string {
  const p = /^file:\/\//i.test(url) ? Bun.fileURLToPath(url) : url; // Bun's: node:url costs a millisecond to load
  return isAbsolute(p) ? p : resolve(p);
}

/** The URL as shown in messages: never with a password in it. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password === "") return url;
    u.password = "***";
    return u.href;
  } catch {
    return url;
  }
}

/**
 * The last of the checks on control characters: every surface refuses them
 * first, with its own exit code; the backend picker and the ref listing call
 * this too, so no URL that slipped past reaches a clone, a fetch, a ref
 * listing or a `.git/config`.
 */
export function assertGitUrl(url: string): void {
  const control = controlCharProblem("it", url);
  if (control !== null) throw packOpError(`Refusing the git URL ${JSON.stringify(url)}: ${control}; correct it where it was given.`, { url });
}
