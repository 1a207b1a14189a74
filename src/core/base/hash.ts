// actions_hash (SPEC §2.2): sha256 over a canonical encoding of a pack's
// installable surface. The commit sha is deliberately not part of it, so an
// unrelated commit does not trigger a reinstall on `sync`.
import { readdirSync, readFileSync, readlinkSync, lstatSync } from "node:fs";
import { join } from "node:path";

/** JSON with object keys sorted at every level: equal values encode to equal bytes. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(",")}}`;
}

/**
 * Every file under `dir` as (relative path, bytes), sorted by path; links
 * hash their target and are never followed — `dir` itself included (a pack's
 * `files` that links to /usr is one entry, not a walk of /usr): nothing
 * outside the pack is read.
 */
export function treeEntries(dir: string): Array<[string, Uint8Array]> {
  const out: Array<[string, Uint8Array]> = [];
  let top: ReturnType<typeof lstatSync>;
  try {
    top = lstatSync(dir);
  } catch {
    return out;
  }
  if (top.isSymbolicLink()) return [["", Buffer.from(`link:${readlinkSync(dir)}`)]];
  if (top.isFile()) return [["", readFileSync(dir)]];
  if (!top.isDirectory()) return out;
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, r));
      if (st.isDirectory()) walk(r);
      else if (st.isSymbolicLink()) out.push([r, Buffer.from(`link:${readlinkSync(join(dir, r))}`)]);
      else if (st.isFile()) out.push([r, readFileSync(join(dir, r))]);
    }
  };
  walk("");
  return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

export class SurfaceHasher {
  // Bun's native hasher: node:crypto pulls in Node's stream machinery (~3 ms at startup).
  private readonly h = new Bun.CryptoHasher("sha256");

  json(label: string, value: unknown): this {
    this.h.update(`${label}\0${canonicalJson(value)}\0`);
    return this;
  }

  tree(label: string, dir: string): this {
    for (const [rel, bytes] of treeEntries(dir)) {
      this.h.update(`${label}\0${rel}\0${bytes.length}\0`);
      this.h.update(bytes);
    }
    return this;
  }

  digest(): string {
    return `sha256:${this.h.digest("hex")}`;
  }
}
