// Which transport a pack URL needs, and the filesystem path of a local one.
import { isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export type Transport = "http" | "local" | "ssh";

export function transportOf(url: string): Transport {
  if (/^https?:\/\//i.test(url)) return "http";
  if (/^ssh:\/\//i.test(url) || /^git\+ssh:\/\//i.test(url)) return "ssh";
  if (/^file:\/\//i.test(url)) return "local";
  // scp-style user@host:path (a Windows drive "C:\..." or a plain path is local)
  if (/^[^/\\:@]+@[^/\\:]+:/.test(url) || /^[A-Za-z0-9][\w.-]*\.[\w.-]+:(?!\/\/)/.test(url)) return "ssh";
  return "local";
}

/** Absolute filesystem path for a local pack URL (a path or a file:// URL). */
export function localPath(url: string): string {
  const p = /^file:\/\//i.test(url) ? fileURLToPath(url) : url;
  return isAbsolute(p) ? p : resolve(p);
}
