// git's smart HTTP protocol (version 0/1, upload-pack side), spoken with Bun's
// fetch: its connection pool keeps the connection to a host alive, so the
// many packs of one workspace share a few sockets. A fetch is exactly two
// requests: one ref advertisement (GET info/refs) and one upload-pack POST
// that names what we want and what we have, answered by a pack of only the
// missing objects (no thin packs, so every delta base is in the pack or here).
import { ByteWindow } from "../../base/byte-window.ts";
import { GrexError, packOpError, throwIfAborted } from "../../base/errors.ts";
import { type BodyReader, openTransfer } from "./http-body.ts";
import { type TransferLimits, transferLimits } from "../objects/limits.ts";
import type { ByteSource } from "../objects/pack-receive.ts";
import { pickDefaultBranch, type RemoteRefs } from "./remote-refs.ts";
import { displayUrl } from "./url.ts";

const USER_AGENT = "git/grex";
const ZERO_OID = "0".repeat(40);
/** Messages (band 2) a server may send beside the pack; no-progress leaves only a few lines. */
const MAX_SIDEBAND_MESSAGES = 1024 * 1024;

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

/** Reads pkt-lines (and, after them, raw bytes) from a response body as it arrives. */
export class PktStream {
  private readonly w = new ByteWindow(64 * 1024);
  private ended = false;

  constructor(private readonly body: BodyReader) {}

  /** Make `n` bytes available; false if the body ends first (chunks go to a ByteWindow: tiny ones cost no copying of what came before). */
  async need(n: number): Promise<boolean> {
    while (this.w.available < n) {
      if (this.ended) return false;
      const chunk = await this.body.read();
      if (chunk === null) {
        this.ended = true;
        return false;
      }
      this.w.append(chunk);
    }
    return true;
  }

  /** The next 4 bytes, without taking them ("" if fewer remain). */
  async peek4(): Promise<string> {
    return (await this.need(4)) ? this.w.buf.toString("latin1", this.w.start, this.w.start + 4) : "";
  }

  /** The next pkt-line's payload (null for a flush), or undefined if malformed or cut off. */
  async pkt(): Promise<Buffer | null | undefined> {
    if (!(await this.need(4))) return undefined;
    // The payload is copied out: the window is reused for what follows.
    const head = this.w.buf.toString("latin1", this.w.start, this.w.start + 4);
    if (!/^[0-9a-f]{4}$/i.test(head)) return undefined;
    const len = Number.parseInt(head, 16);
    if (len === 0) {
      this.w.start += 4;
      return null;
    }
    if (len < 4 || !(await this.need(len))) return undefined;
    const payload = Buffer.from(this.w.buf.subarray(this.w.start + 4, this.w.start + len));
    this.w.start += len;
    return payload;
  }

  /** Whatever is buffered, then the rest of the body as it arrives. */
  async raw(): Promise<Uint8Array | null> {
    if (this.w.start < this.w.end) {
      const rest = Buffer.from(this.w.buf.subarray(this.w.start, this.w.end));
      this.w.start = this.w.end;
      return rest;
    }
    if (this.ended) return null;
    const chunk = await this.body.read();
    if (chunk === null) this.ended = true;
    return chunk;
  }
}

/**
 * One request to `path` under `base` (credentials from `url`, the URL as the
 * user gave it), under the transfer limits; returns the body as a pkt-line
 * stream and the URL that answered. The caller closes `body`.
 */
async function request(
  url: string,
  base: string,
  path: string,
  init: RequestInit & { headers: Record<string, string> },
  signal: AbortSignal,
  limits: TransferLimits,
): Promise<{ body: BodyReader; answeredAt: string }> {
  throwIfAborted(signal);
  const target = endpoint(base, path);
  const own = endpoint(url, path);
  // The user's credentials go only to the host they were given for.
  const { href, headers } = new URL(target.href).origin === new URL(own.href).origin ? { href: target.href, headers: own.headers } : target;
  const isPost = init.method === "POST";
  const { res, body } = await openTransfer(
    href,
    { ...init, headers: { ...headers, "Accept-Encoding": "identity", ...init.headers }, redirect: isPost ? "error" : "follow" },
    isPost
      ? { url, limits, signal, cap: limits.maxPackBytes + Math.floor(limits.maxPackBytes / 64) + 1024 * 1024, capKey: "maxPackBytes", what: "pack" }
      : { url, limits, signal, cap: limits.maxRefsBytes, capKey: "maxRefsBytes", what: "ref advertisement" },
  );
  if (res.status !== 200) {
    await body.close();
    throw httpStatusError(url, res.status);
  }
  const type = res.headers.get("content-type") ?? "";
  const want = isPost ? "application/x-git-upload-pack-result" : "application/x-git-upload-pack-advertisement";
  if (!type.startsWith(want)) {
    await body.close();
    throw notGitServer(url, type === "" ? "no content type" : `content type ${type.split(";")[0]}`);
  }
  return { body, answeredAt: res.url || href };
}

/** The remote's refs and capabilities: one GET, read as it arrives. */
export async function advertise(url: string, signal: AbortSignal, limits: TransferLimits = transferLimits()): Promise<Advertisement> {
  const refsPath = "info/refs?service=git-upload-pack";
  const { body, answeredAt } = await request(url, url, refsPath, { method: "GET", headers: {} }, signal, limits);
  try {
    const base = answeredAt.endsWith(`/${refsPath}`) ? answeredAt.slice(0, -refsPath.length - 1) : url;
    const pkts = new PktStream(body);
    // "# service=git-upload-pack", flush, then the refs, flush.
    const first = await pkts.pkt();
    if (first?.toString("utf8").trimEnd() !== "# service=git-upload-pack") throw notGitServer(url, "not a smart HTTP ref advertisement");
    if ((await pkts.pkt()) !== null) throw notGitServer(url, "not a smart HTTP ref advertisement");
    const capabilities = new Set<string>();
    const branches = new Map<string, string>();
    const tags = new Map<string, string>();
    let headOid: string | null = null;
    for (let i = 0; ; i++) {
      if (i % 4096 === 0) throwIfAborted(signal);
      const pkt = await pkts.pkt();
      if (pkt === undefined) throw notGitServer(url, "its ref advertisement is cut off");
      if (pkt === null) break;
      let line = pkt.toString("utf8").replace(/\n$/, "");
      if (i === 0 && line.startsWith("ERR ")) throw refused(url, line);
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
  } finally {
    await body.close();
  }
}

/** What an upload-pack request asks for beyond wants and haves. */
export interface UploadPackOptions {
  /** A partial clone's filter (`blob:none`, …): sent as the `filter` capability and line when the server advertises `filter`. */
  filter?: string;
  /** A shallow repository's boundary and, to deepen, how deep. */
  shallow?: ShallowRequest;
}

/** The pack of an upload-pack reply, as it arrives; `close` ends the request. */
export interface PackStream extends ByteSource {
  close(): Promise<void>;
  /** The server's `shallow` and `unshallow` lines (a deepen request only): the new boundary commits, and ours it lifted. */
  shallow: { added: string[]; removed: string[] };
}

/** What a shallow repository tells the server: its boundary (`shallow` lines) and, to deepen, `deepen <depth>`. */
export interface ShallowRequest {
  ours: string[];
  depth?: number;
}

/**
 * Ask for `wants`, telling the server what we `haves`; returns the pack it
 * sends as a stream of bytes starting with "PACK". Without multi_ack the
 * server answers one ACK (or NAK) and then the pack. With side-band-64k the
 * pack comes in band 1, progress in band 2 (ignored) and an error in band 3;
 * an empty band-1 packet before the pack is a keep-alive.
 */
export async function uploadPack(
  url: string,
  ad: Advertisement,
  wants: string[],
  haves: string[],
  signal: AbortSignal,
  limits: TransferLimits = transferLimits(),
  opts: UploadPackOptions = {},
): Promise<PackStream> {
  let sideband = ad.capabilities.has("side-band-64k");
  const shallow = opts.shallow ?? { ours: [] };
  const deepen = shallow.depth !== undefined && shallow.depth > 0;
  const cut = deepen || shallow.ours.length > 0;
  if (cut && !ad.capabilities.has("shallow")) {
    throw packOpError(`${displayUrl(url)} does not serve shallow clones (no 'shallow' capability); clone it without --depth.`, { url: displayUrl(url) });
  }
  // A filter is sent only to a server that advertises it (the caller decides what to do when it does not).
  const filter = opts.filter !== undefined && ad.capabilities.has("filter") ? opts.filter : undefined;
  // A shallow repository fetches one branch and follows the tags into what it gets (shallow-refs.ts followedTags): include-tag sends their tag objects along.
  const wanted = [...(sideband ? ["side-band-64k"] : []), "ofs-delta", ...(cut ? ["shallow", "include-tag"] : []), "no-progress", ...(filter !== undefined ? ["filter"] : [])];
  const caps = [...wanted, `agent=${USER_AGENT}`].filter((c) => c.startsWith("agent=") || ad.capabilities.has(c));
  let body = wants.map((oid, i) => pktLine(`want ${oid}${i === 0 ? ` ${caps.join(" ")}` : ""}\n`)).join("");
  // As fetch-pack writes them: our boundary, how deep to go, then the filter, before the flush that ends the wants.
  for (const oid of shallow.ours) body += pktLine(`shallow ${oid}\n`);
  if (deepen) body += pktLine(`deepen ${shallow.depth}\n`);
  if (filter !== undefined) body += pktLine(`filter ${filter}\n`);
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
    limits,
  );
  try {
    const pkts = new PktStream(res);
    // With deepen: the shallow section (`shallow`/`unshallow` lines, flush); then ACK/NAK lines, then the pack. An ERR line instead means the server refused.
    const info = { added: [] as string[], removed: [] as string[] };
    let first: Buffer | null = null;
    for (;;) {
      if ((await pkts.peek4()) === "PACK") {
        // A server may send the pack bare even though side-band was asked for.
        sideband = false;
        break;
      }
      const pkt = await pkts.pkt();
      if (pkt === undefined) throw notGitServer(url, "no pack in the upload-pack reply");
      if (pkt === null) continue;
      const line = pkt.toString("latin1");
      if (line.startsWith("ERR ")) throw refused(url, line);
      if (/^(ACK [0-9a-f]{40}|NAK)/.test(line)) continue;
      const sh = deepen ? /^(un)?shallow ([0-9a-f]{40})\n?$/.exec(line) : null;
      if (sh) {
        (sh[1] ? info.removed : info.added).push(sh[2] as string);
        continue;
      }
      if (sideband && pkt.length > 0 && (pkt[0] as number) <= 3) {
        first = pkt;
        break;
      }
      throw notGitServer(url, `unexpected reply '${line.trim().slice(0, 60)}'`);
    }
    if (!sideband) return { read: () => pkts.raw(), close: () => res.close(), shallow: info };
    return { read: sidebandReader(pkts, res, url, first), close: () => res.close(), shallow: info };
  } catch (err) {
    await res.close();
    throw err;
  }
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
 * The pack inside a side-band-64k reply: band 1 is pack data, band 2 the
 * server's messages, band 3 its fatal error. A band-3 line, or a reply cut
 * off after the server wrote an error, fails with the server's own text
 * (`remote: fatal: …`); a clean reply ends with a flush. `first` is a packet
 * already taken from `pkts`.
 */
export function sidebandReader(pkts: PktStream, body: Pick<BodyReader, "keepalive">, url: string, first: Buffer | null = null): () => Promise<Uint8Array | null> {
  let started = false;
  let talk = 0;
  const said: string[] = [];
  return async () => {
    for (;;) {
      const pkt = first ?? (await pkts.pkt());
      first = null;
      if (pkt === undefined) {
        if (said.some((t) => /(^|\n)\s*(fatal|error)\b/i.test(t))) throw serverAborted(url, said);
        throw notGitServer(url, "its side-band stream is cut off");
      }
      if (pkt === null) return null;
      const band = pkt[0];
      if (band === 1) {
        if (pkt.length === 1) {
          if (!started) body.keepalive();
          continue;
        }
        started = true;
        return pkt.subarray(1);
      }
      if (band === 3) throw serverAborted(url, [...said, "\n", pkt.toString("utf8", 1)]);
      if (band !== 2) throw notGitServer(url, `side-band ${band}`);
      // Progress was not asked for (no-progress): a server that keeps talking is stopped here.
      talk += pkt.length;
      if (talk > MAX_SIDEBAND_MESSAGES) throw notGitServer(url, `more than ${MAX_SIDEBAND_MESSAGES} bytes of side-band messages`);
      said.push(pkt.toString("utf8", 1));
    }
  };
}
