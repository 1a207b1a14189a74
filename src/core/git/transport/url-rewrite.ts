// Mirrors: `url.<base>.insteadOf` and `url.<base>.pushInsteadOf` from the
// user's git configuration, applied as git's remote.c applies them
// (alias_url): among every insteadOf value the URL starts with, the longest
// wins (on a tie, the one of the base configured first, then the value
// configured first); the URL becomes the base followed by the rest after
// that prefix. The rewrite is applied once, never to its own result. The
// fetch URL uses insteadOf only; the push URL uses pushInsteadOf when one
// matches, else insteadOf. The manifest keeps the URL it was given: the
// rewrite is per machine, done each time a URL is fetched.
import { type GrexError, packOpError } from "../../base/grex-error.ts";
import { type ConfigEntry, LayeredConfig } from "../refs/config.ts";
import { displayUrl } from "./url.ts";

type Env = NodeJS.ProcessEnv;

interface Rewrite {
  base: string;
  prefixes: string[];
}

/** The user's URL rewrites (insteadOf for fetch, pushInsteadOf for push), in git's order. */
export interface UrlRewrites {
  fetch: Rewrite[];
  push: Rewrite[];
  /** The first `url.<base>.insteadOf`/`pushInsteadOf` set without a value (git stops on it: "missing value"), or null. */
  bare: string | null;
}

/** The `url.*` rewrites among config entries (a key without a subsection is no rewrite, as in git; a bare key is noted in `bare`). */
export function urlRewritesOf(entries: readonly ConfigEntry[]): UrlRewrites {
  const fetch: Rewrite[] = [];
  const push: Rewrite[] = [];
  let bare: string | null = null;
  for (const e of entries) {
    if (e.section !== "url" || e.sub === null) continue;
    const list = e.key === "insteadof" ? fetch : e.key === "pushinsteadof" ? push : null;
    if (list === null) continue;
    if (e.value === null) {
      bare ??= `url.${e.sub}.${e.key === "insteadof" ? "insteadOf" : "pushInsteadOf"}`;
      continue;
    }
    let r = list.find((x) => x.base === e.sub);
    if (r === undefined) list.push((r = { base: e.sub, prefixes: [] }));
    r.prefixes.push(e.value);
  }
  return { fetch, push, bare };
}

/**
 * The rewrites of the user's configuration: the system file, the global
 * files (or GIT_CONFIG_GLOBAL), GIT_CONFIG_PARAMETERS and GIT_CONFIG_COUNT,
 * read by the config manager. A repository's own config is not read: the
 * rewrite must be the same for a pack before and after it is cloned.
 */
export function userUrlRewrites(env: Env = process.env): UrlRewrites {
  return urlRewritesOf(LayeredConfig.load(null, env).entries);
}

/** alias_url: the longest matching prefix's rewrite, or null when none matches. */
function alias(url: string, rewrites: readonly Rewrite[]): string | null {
  let best: { base: string; len: number } | null = null;
  for (const r of rewrites) {
    for (const p of r.prefixes) {
      if (url.startsWith(p) && (best === null || best.len < p.length)) best = { base: r.base, len: p.length };
    }
  }
  return best === null ? null : best.base + url.slice(best.len);
}

/** The URL git would fetch from for `url` (insteadOf applied once), or `url` itself. */
export function rewriteFetchUrl(url: string, rewrites: UrlRewrites): string {
  return alias(url, rewrites.fetch) ?? url;
}

/** The URL git would push to for `url`: pushInsteadOf when one matches, else insteadOf. */
export function rewritePushUrl(url: string, rewrites: UrlRewrites): string {
  return alias(url, rewrites.push) ?? rewriteFetchUrl(url, rewrites);
}

/** The fetch URL of `url` under the user's configuration as it is now. */
export function fetchUrlOf(url: string, env: Env = process.env): string {
  return rewriteFetchUrl(url, userUrlRewrites(env));
}

/**
 * For reports (`status`, `doctor`): a function giving the URL a pack is
 * fetched from when the user's configuration rewrites it (shown without a
 * password), else null. The configuration is read once, here.
 */
export function mirrorOf(env: Env = process.env): (url: string) => string | null {
  const rewrites = userUrlRewrites(env);
  return (url) => {
    if (url === "") return null;
    const to = rewriteFetchUrl(url, rewrites);
    return to === url ? null : displayUrl(to);
  };
}

/** The error for an insteadOf set without a value (git stops every command on it), or null. */
export function bareRewriteError(rewrites: UrlRewrites): GrexError | null {
  if (rewrites.bare === null) return null;
  return packOpError(`${rewrites.bare} is set without a value in your git configuration, which git refuses ("missing value"); give it a value or remove it (git config --global --get-regexp '^url\\.').`);
}

/**
 * The URL to fetch `url` from, refused (pack_op) when a rewrite made it one
 * grex would never fetch: a control character in it, or a leading `-` that a
 * program would take for an option; or when an insteadOf has no value (git
 * stops every command on it). Without a rewrite, `url` as it is.
 */
export function checkedFetchUrl(url: string, env: Env = process.env): string {
  const rewrites = userUrlRewrites(env);
  const bare = bareRewriteError(rewrites);
  if (bare !== null) throw bare;
  const to = rewriteFetchUrl(url, rewrites);
  if (to !== url && (/[\x00-\x1f\x7f]/.test(to) || to.startsWith("-"))) {
    throw packOpError(
      `${displayUrl(url)} is rewritten by url.<base>.insteadOf in your git configuration to a URL with a control character or a leading '-'; fix that setting (git config --global --get-regexp '^url\\.').`,
      { url },
    );
  }
  return to;
}
