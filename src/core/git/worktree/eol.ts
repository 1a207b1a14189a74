// Line-ending conversion as git's convert.c decides it. From a path's
// `text`/`crlf` and `eol` attributes and the `core.autocrlf`/`core.eol`
// settings comes one action; checkout ("smudge", toWorktree) may turn LF into
// CRLF, and the comparison `status` makes ("clean", toGit) turns CRLF back
// into LF before hashing, so a file git checked out reads clean.
//
// The auto actions (`text=auto`, or core.autocrlf with no text attribute)
// leave alone what looks binary (a NUL, a lone CR, or more than one control
// character per 128 printable ones) and, on checkout, anything that already
// has a CR; on the clean side a file whose blob in the index already holds
// CRLF line endings is hashed as it is (git's "safer autocrlf"). git's
// core.safecrlf warnings about conversions that would not round-trip are
// not given: grex never writes blobs, so nothing it does can lose a CR.
import type { AttrState } from "./attributes.ts";
import { type LayeredConfig, configBool } from "../refs/config.ts";

export type CrlfAction = "binary" | "text" | "text-input" | "text-crlf" | "auto" | "auto-input" | "auto-crlf";

export interface EolSettings {
  autocrlf: "true" | "input" | "false";
  /** core.eol; "native" is LF here (grex writes CRLF natively only where git would: never on Unix). */
  eol: "lf" | "crlf" | "native";
}

export function eolSettings(cfg: LayeredConfig): EolSettings {
  const a = cfg.get("core", null, "autocrlf");
  const autocrlf = a !== null && a.toLowerCase() === "input" ? "input" : configBool(a) === true ? "true" : "false";
  const e = cfg.get("core", null, "eol")?.toLowerCase();
  return { autocrlf, eol: e === "lf" || e === "crlf" ? e : "native" };
}

function textAttr(v: AttrState | undefined): CrlfAction | null {
  if (v === true) return "text";
  if (v === false) return "binary";
  if (v === "input") return "text-input";
  if (v === "auto") return "auto";
  return null;
}

/** The conversion git applies to a path with these attributes and settings. */
export function crlfAction(attrs: Map<string, AttrState>, s: EolSettings): CrlfAction {
  let action = textAttr(attrs.get("text")) ?? textAttr(attrs.get("crlf")); // `crlf` is text's old name
  if (action !== "binary") {
    const eol = attrs.get("eol");
    if (eol === "lf") action = action === "auto" ? "auto-input" : "text-input";
    else if (eol === "crlf") action = action === "auto" ? "auto-crlf" : "text-crlf";
  }
  if (action !== null) return action;
  return s.autocrlf === "true" ? "auto-crlf" : s.autocrlf === "input" ? "auto-input" : "binary";
}

function textEolIsCrlf(s: EolSettings): boolean {
  if (s.autocrlf === "true") return true;
  if (s.autocrlf === "input") return false;
  return s.eol === "crlf";
}

function outputIsCrlf(action: CrlfAction, s: EolSettings): boolean {
  switch (action) {
    case "binary":
    case "text-input":
    case "auto-input":
      return false;
    case "text-crlf":
    case "auto-crlf":
      return true;
    default:
      return textEolIsCrlf(s);
  }
}

interface Stats {
  nul: number;
  lonecr: number;
  lonelf: number;
  crlf: number;
  printable: number;
  nonprintable: number;
}

function gather(buf: Uint8Array): Stats {
  const s: Stats = { nul: 0, lonecr: 0, lonelf: 0, crlf: 0, printable: 0, nonprintable: 0 };
  const n = buf.length;
  for (let i = 0; i < n; i++) {
    const c = buf[i] as number;
    if (c === 13) {
      if (i + 1 < n && buf[i + 1] === 10) {
        s.crlf++;
        i++;
      } else s.lonecr++;
    } else if (c === 10) s.lonelf++;
    else if (c === 127) s.nonprintable++;
    else if (c < 32) {
      if (c === 8 || c === 9 || c === 27 || c === 12) s.printable++;
      else {
        if (c === 0) s.nul++;
        s.nonprintable++;
      }
    } else s.printable++;
  }
  if (n > 0 && buf[n - 1] === 26) s.nonprintable--; // a trailing ^Z (DOS end of file) is not held against it
  return s;
}

const looksBinary = (s: Stats) => s.lonecr > 0 || s.nul > 0 || s.printable >> 7 < s.nonprintable;
const isAuto = (a: CrlfAction) => a === "auto" || a === "auto-input" || a === "auto-crlf";

/** A blob that is text with CRLF line endings (the index check of git's safer autocrlf). */
export function hasCrlfText(buf: Uint8Array): boolean {
  if (buf.indexOf(13) < 0) return false;
  const s = gather(buf);
  return s.crlf > 0 && !looksBinary(s);
}

/** Checkout: a blob's bytes as git writes them to the work tree. */
export function toWorktree(buf: Uint8Array, action: CrlfAction, s: EolSettings): Uint8Array {
  if (buf.length === 0 || !outputIsCrlf(action, s)) return buf;
  const st = gather(buf);
  if (st.lonelf === 0) return buf;
  if (isAuto(action) && (st.lonecr > 0 || st.crlf > 0 || looksBinary(st))) return buf;
  const out = Buffer.allocUnsafe(buf.length + st.lonelf);
  let j = 0;
  let last = 0;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i] as number;
    if (c === 10 && last !== 13) out[j++] = 13;
    out[j++] = c;
    last = c;
  }
  return out.subarray(0, j);
}

/**
 * Status's clean side: a work-tree file's bytes as git would hash them.
 * `indexHasCrlf` is asked only for the auto actions.
 */
export function toGit(buf: Uint8Array, action: CrlfAction, indexHasCrlf: () => boolean): Uint8Array {
  if (action === "binary" || buf.length === 0 || buf.indexOf(13) < 0) return buf;
  const st = gather(buf);
  if (st.crlf === 0) return buf;
  const auto = isAuto(action);
  if (auto && (looksBinary(st) || indexHasCrlf())) return buf;
  const out = Buffer.allocUnsafe(buf.length);
  let j = 0;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i] as number;
    // auto already refused a lone CR, so every CR goes; otherwise only a CR before LF.
    if (c === 13 && (auto || buf[i + 1] === 10)) continue;
    out[j++] = c;
  }
  return out.subarray(0, j);
}
