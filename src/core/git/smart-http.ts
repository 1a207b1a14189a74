// git's smart HTTP protocol (version 0/1, upload-pack side), spoken with Bun's
// fetch: its connection pool keeps the connection to a host alive, so the
// many packs of one workspace share a few sockets. A fetch is exactly two
// requests: one ref advertisement (GET info/refs) and one upload-pack POST
// that names what we want and what we have, answered by a pack of only the
// missing objects (no thin packs, so every delta base is in the pack or here).
import { GrexError, packOpError, throwIfAborted } from "../errors.ts";
import { pickDefaultBranch, type RemoteRefs } from "./remote-refs.ts";
import { displayUrl } from "./url.ts";

const USER_AGENT = "git/grex";
const ZERO_OID = "0".repeat(40);

/** A remote's advertisement: its refs and the capabilities it offers. */
export interface Advertisement {
  remote: RemoteRefs;
  capabilities: Set<string>;
  /** Where the repository answered: the URL itself, or where its first request was redirected (as git follows redirects). */
  base: string;
}

/** The URL without credentials, plus an Authorization header made from them (as git does for user:pass@host). */
function endpoint(url: string, path: string): { href: string; headers: Record<string, string> } {
  const u = new URL(url);
  const headers: Record<string, string> = { "User-Agent": USER_AGENT };
  if (u.username !== "" || u.password !== "") {
    const user = decodeURIComponent(u.username);
    const pass = decodeURIComponent(u.password);
    headers.Authorization = `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
    u.username = "";
    u.password = "";
  }
  const [file, query] = path.split("?");
  u.pathname = `${u.pathname.replace(/\/+$/, "")}/${file}`;
  u.search = query ?? "";
  return { href: u.href, headers };
}

export const httpStatusError = (url: string, status: number): GrexError => {
  const hint = status === 401 || status === 403 ? "check your access to it" : "check the URL";
  return packOpError(`${displayUrl(url)} answered HTTP ${status}; ${hint}.`, { url: displayUrl(url), status });
};

const notGitServer = (url: string, why: string): GrexError =>
  packOpError(`${displayUrl(url)} did not answer as a git server (${why}); check the URL.`, { url: displayUrl(url) });

const refused = (url: string, errLine: string): GrexError =>
  packOpError(`${displayUrl(url)} refused the fetch (${errLine.slice(4).trim()}); check the URL and your access.`, { url: displayUrl(url) });

/** One pkt-line: 4 hex digits of length (themselves included), then the payload. */
export function pktLine(payload: string): string {
  return `${(payload.length + 4).toString(16).padStart(4, "0")}${payload}`;
}

/** The pkt-line at `at`: its payload (null for a flush) and where the next one starts; null if malformed or cut off. */
export function readPkt(buf: Buffer, at: number): { line: string | null; end: number } | null {
  if (at + 4 > buf.length) return null;
  const len = Number.parseInt(buf.toString("latin1", at, at + 4), 16);
  if (!/^[0-9a-f]{4}$/i.test(buf.toString("latin1", at, at + 4)) || (len !== 0 && len < 4) || at + Math.max(len, 4) > buf.length) return null;
  if (len === 0) return { line: null, end: at + 4 };
  return { line: buf.toString("utf8", at + 4, at + len), end: at + len };
}

/**
 * One request to `path` under `base` (credentials from `url`, the URL as the
 * user gave it); returns the body and the URL that answered.
 */
async function request(
  url: string,
  base: string,
  path: string,
  init: RequestInit & { headers: Record<string, string> },
  signal: AbortSignal,
): Promise<{ body: Buffer; answeredAt: string }> {
  throwIfAborted(signal);
  const target = endpoint(base, path);
  const own = endpoint(url, path);
  // The user's credentials go only to the host they were given for.
  const { href, headers } = new URL(target.href).origin === new URL(own.href).origin ? { href: target.href, headers: own.headers } : target;
  const res = await fetch(href, { ...init, headers: { ...headers, ...init.headers }, signal, redirect: init.method === "GET" ? "follow" : "error" });
  if (res.status !== 200) {
    await res.body?.cancel();
    throw httpStatusError(url, res.status);
  }
  const type = res.headers.get("content-type") ?? "";
  const want = init.method === "POST" ? "application/x-git-upload-pack-result" : "application/x-git-upload-pack-advertisement";
  if (!type.startsWith(want)) {
    await res.body?.cancel();
    throw notGitServer(url, type === "" ? "no content type" : `content type ${type.split(";")[0]}`);
  }
  return { body: Buffer.from(await res.arrayBuffer()), answeredAt: res.url || href };
}

/** The remote's refs and capabilities: one GET. */
export async function advertise(url: string, signal: AbortSignal): Promise<Advertisement> {
  const refsPath = "info/refs?service=git-upload-pack";
  const { body, answeredAt } = await request(url, url, refsPath, { method: "GET", headers: {} }, signal);
  const base = answeredAt.endsWith(`/${refsPath}`) ? answeredAt.slice(0, -refsPath.length - 1) : url;
  // "# service=git-upload-pack", flush, then the refs, flush.
  const first = readPkt(body, 0);
  if (first?.line?.trimEnd() !== "# service=git-upload-pack") throw notGitServer(url, "not a smart HTTP ref advertisement");
  const refLines: string[] = [];
  for (let at = first.end, flushes = 0; flushes < 2; ) {
    const pkt = readPkt(body, at);
    if (!pkt) throw notGitServer(url, "its ref advertisement is cut off");
    if (pkt.line === null) flushes++;
    else refLines.push(pkt.line);
    at = pkt.end;
  }
  if (refLines[0]?.startsWith("ERR ")) throw refused(url, refLines[0]);
  const capabilities = new Set<string>();
  const branches = new Map<string, string>();
  const tags = new Map<string, string>();
  let headOid: string | null = null;
  for (const [i, raw] of refLines.entries()) {
    let line = raw.replace(/\n$/, "");
    if (i === 0) {
      const nul = line.indexOf("\0");
      if (nul >= 0) {
        for (const c of line.slice(nul + 1).split(" ")) if (c !== "") capabilities.add(c);
        line = line.slice(0, nul);
      }
    }
    const sp = line.indexOf(" ");
    const oid = line.slice(0, sp);
    const name = line.slice(sp + 1);
    if (!/^[0-9a-f]{40}$/.test(oid)) throw notGitServer(url, `bad ref line '${line.slice(0, 60)}'`);
    if (oid === ZERO_OID) continue; // "capabilities^{}" of an empty repository
    if (name === "HEAD") headOid = oid;
    else if (name.startsWith("refs/heads/")) branches.set(name.slice(11), oid);
    else if (name.startsWith("refs/tags/") && !name.endsWith("^{}")) tags.set(name.slice(10), oid);
  }
  let headTarget: string | null = null;
  for (const c of capabilities) if (c.startsWith("symref=HEAD:")) headTarget = c.slice(12);
  return { remote: { branches, tags, defaultBranch: pickDefaultBranch(branches, headTarget, headOid) }, capabilities, base };
}

/**
 * Ask for `wants`, telling the server what we `haves`; returns the pack it
 * sends (the raw bytes, starting with "PACK"). Without multi_ack the server
 * answers one ACK (or NAK) and then the pack, all in one response.
 */
export async function uploadPack(url: string, ad: Advertisement, wants: string[], haves: string[], signal: AbortSignal): Promise<Buffer> {
  // side-band-64k: the pack comes framed, so a server that fails mid-pack can say why (band 3) and we pass it on.
  const caps = ["ofs-delta", "side-band-64k", "no-progress", `agent=${USER_AGENT}`].filter((c) => c.startsWith("agent=") || ad.capabilities.has(c));
  const sideband = caps.includes("side-band-64k");
  let body = wants.map((oid, i) => pktLine(`want ${oid}${i === 0 ? ` ${caps.join(" ")}` : ""}\n`)).join("");
  body += "0000";
  for (const oid of haves) body += pktLine(`have ${oid}\n`);
  body += pktLine("done\n");
  const { body: res } = await request(
    url,
    ad.base,
    "git-upload-pack",
    {
      method: "POST",
      headers: { "Content-Type": "application/x-git-upload-pack-request", Accept: "application/x-git-upload-pack-result" },
      body,
    },
    signal,
  );
  // ACK/NAK lines, then the pack. An ERR line instead means the server refused.
  let at = 0;
  while (at + 4 <= res.length && res.toString("latin1", at, at + 4) !== "PACK") {
    if (sideband && (res[at + 4] as number) >= 1 && (res[at + 4] as number) <= 3) return unwrapSideband(res, at, url);
    const pkt = readPkt(res, at);
    if (!pkt) break;
    const line = pkt.line ?? "";
    if (line.startsWith("ERR ")) throw refused(url, line);
    if (pkt.line !== null && !/^(ACK [0-9a-f]{40}|NAK)/.test(line)) throw notGitServer(url, `unexpected reply '${line.trim().slice(0, 60)}'`);
    at = pkt.end;
  }
  if (res.toString("latin1", at, at + 4) !== "PACK") throw notGitServer(url, "no pack in the upload-pack reply");
  return res.subarray(at);
}

/** The server's own words, as git shows them ("remote: fatal: …"), in a one-sentence error. */
const serverAborted = (url: string, said: string[]): GrexError => {
  // Band-2 text comes in arbitrary pieces: lines are whole only once joined.
  const lines = said.join("").split(/[\r\n]+/).map((l) => l.trim()).filter((l) => l !== "");
  const errors = lines.filter((l) => /^(fatal|error)\b/i.test(l));
  const shown = (errors.length > 0 ? errors : lines).slice(-3).map((l) => `remote: ${l}`).join(" / ");
  return packOpError(`${displayUrl(url)} stopped sending the pack (${shown}); the problem is on the server: try again later or tell its owner.`, { url: displayUrl(url), remote: lines });
};

/**
 * The pack inside a side-band-64k reply starting at `at`: band 1 is pack
 * data, band 2 the server's messages, band 3 its fatal error. A band-3 line,
 * or a reply cut off after the server wrote an error, fails with the
 * server's text; a clean reply ends with a flush.
 */
export function unwrapSideband(res: Buffer, at: number, url: string): Buffer {
  const chunks: Buffer[] = [];
  const said: string[] = [];
  let flushed = false;
  while (at + 4 <= res.length) {
    const hex = res.toString("latin1", at, at + 4);
    const len = Number.parseInt(hex, 16);
    if (!/^[0-9a-f]{4}$/i.test(hex) || (len !== 0 && len < 5) || at + Math.max(len, 4) > res.length) break;
    if (len === 0) {
      flushed = true;
      break;
    }
    const band = res[at + 4];
    const data = res.subarray(at + 5, at + len);
    if (band === 1) chunks.push(data);
    else if (band === 2) said.push(data.toString("utf8"));
    else if (band === 3) throw serverAborted(url, [...said, "\n", data.toString("utf8")]);
    else break;
    at += len;
  }
  if (!flushed && said.some((t) => /(^|\n)\s*(fatal|error)\b/i.test(t))) throw serverAborted(url, said);
  return Buffer.concat(chunks);
}
