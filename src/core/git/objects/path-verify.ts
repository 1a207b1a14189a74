// Which tree entry names and modes a checkout accepts. The rules are git's
// verify_path with core.protectNTFS and core.protectHFS both on, applied on
// every platform: a workspace made on Linux is opened on macOS and Windows,
// where `git~1`, `.git.`, `.git::$INDEX_ALLOCATION` or `.g\u200cit` all name
// the repository's own `.git` directory. A checkout that wrote through such a
// name could plant hooks or config that the user's next git command runs.

/** The modes a tree entry may have (git's canonical modes; "40000" is how git writes a tree's). */
export const CANONICAL_MODES: ReadonlySet<string> = new Set(["100644", "100755", "120000", "40000", "040000", "160000"]);

/** Index entry modes (numbers) that are canonical. */
export const CANONICAL_INDEX_MODES: ReadonlySet<number> = new Set([0o100644, 0o100755, 0o120000, 0o160000]);

const isSep = (c: string | undefined) => c === "/" || c === "\\";

/** `.git` followed only by spaces and periods, then the end, a separator or an NTFS stream (`:`). Also `git~1`. */
export function isNtfsDotGit(name: string): boolean {
  let i: number;
  const lower = name.toLowerCase();
  if (lower.startsWith(".git")) i = 4;
  else if (lower.startsWith("git~1")) i = 5;
  else return false;
  for (;; i++) {
    const c = name[i];
    if (c === undefined || isSep(c) || c === ":") return true;
    if (c !== "." && c !== " ") return false;
  }
}

/** Code points HFS+ ignores when comparing names (so `.g\u200cit` is `.git` there). */
const HFS_IGNORED = new Set([0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x206a, 0x206b, 0x206c, 0x206d, 0x206e, 0x206f, 0xfeff]);

/** `.` + `needle` on HFS+: case-insensitive, with the ignorable code points removed. */
function isHfsDot(name: string, needle: string): boolean {
  const chars: number[] = [];
  for (const ch of name) {
    const cp = ch.codePointAt(0) as number;
    if (cp === 0x2f || cp === 0x5c) break; // a separator ends the component
    if (!HFS_IGNORED.has(cp) && chars.push(cp) > needle.length + 1) return false; // longer than the name looked for
  }
  if (chars.length !== needle.length + 1 || chars[0] !== 0x2e) return false;
  for (let i = 0; i < needle.length; i++) {
    const c = chars[i + 1] as number;
    if (c > 127 || String.fromCharCode(c).toLowerCase() !== needle[i]) return false;
  }
  return true;
}

/** NTFS forms of `.gitmodules` (git's is_ntfs_dot_generic): `.gitmodules` + spaces/periods/stream, `gitmod~N`, `gi7eba~N`. */
function isNtfsDotGitmodules(name: string): boolean {
  const tail = (i: number): boolean => {
    for (;; i++) {
      const c = name[i];
      if (c === undefined || c === ":") return true;
      if (c !== " " && c !== ".") return false;
    }
  };
  const lower = name.toLowerCase();
  if (lower.startsWith(".gitmodules")) return tail(11);
  if (lower.startsWith("gitmod") && name[6] === "~" && name[7] !== undefined && name[7] >= "1" && name[7] <= "4") return tail(8);
  // The fall-back short name: up to six characters of "gi7eba", then ~ and digits, eight characters in all.
  const prefix = "gi7eba";
  let sawTilde = false;
  for (let i = 0; i < 8; i++) {
    const c = name[i];
    if (c === undefined) return false;
    if (sawTilde) {
      if (c < "0" || c > "9") return false;
    } else if (c === "~") {
      i++;
      const d = name[i];
      if (d === undefined || d < "1" || d > "9") return false;
      sawTilde = true;
    } else if (i >= 6 || c.charCodeAt(0) > 127 || c.toLowerCase() !== prefix[i]) return false;
  }
  return tail(8);
}

/** Why `name` (one path component) is refused, or null. */
function componentProblem(name: string, symlink: boolean, last: boolean): string | null {
  if (name === "") return "an empty name";
  if (name.includes("/")) return "a name containing '/'";
  if (name.includes("\0")) return "a name containing NUL";
  if (name === "." || name === "..") return `'${name}'`;
  if (name.toLowerCase() === ".git") return "the repository's own .git directory";
  if (isNtfsDotGit(name)) return "a name that is .git on Windows (NTFS)";
  if (isHfsDot(name, "git")) return "a name that is .git on macOS (HFS+)";
  // After a backslash, Windows sees a new component: `a\.git` or `a\git~1` reach .git there.
  for (let i = name.indexOf("\\"); i !== -1; i = name.indexOf("\\", i + 1)) {
    const rest = name.slice(i + 1);
    if (isNtfsDotGit(rest) || rest.toLowerCase() === ".git" || rest === "." || rest === ".." || rest === "") {
      return "a name whose backslash makes it a .git or '..' path on Windows";
    }
  }
  if (symlink && last) {
    if (name.toLowerCase() === ".gitmodules" || isNtfsDotGitmodules(name) || isHfsDot(name, "gitmodules")) {
      return "a symbolic link named .gitmodules";
    }
  }
  return null;
}

/** Why the tree path `parts` (with its entry's raw mode) is refused, or null when a checkout may write it. */
export function pathProblem(parts: readonly string[], mode: string): string | null {
  if (!CANONICAL_MODES.has(mode)) return `a non-canonical mode ${JSON.stringify(mode.slice(0, 24))}`;
  const symlink = mode === "120000";
  for (let i = 0; i < parts.length; i++) {
    const why = componentProblem(parts[i] as string, symlink, i === parts.length - 1);
    if (why) return why;
  }
  // A drive prefix ("C:") makes the first component absolute on Windows.
  if (/^[A-Za-z]:/.test(parts[0] ?? "")) return "a Windows drive prefix";
  return null;
}

/**
 * pathProblem for one tree entry whose leading directories were accepted
 * already (a walk checks each directory's entry before it goes in): only
 * its own name is looked at, with the drive-prefix rule when `top`. The same
 * answer as pathProblem on the whole path, without re-checking every leading
 * component for every file below it.
 */
export function entryProblem(name: string, mode: string, top: boolean): string | null {
  if (!CANONICAL_MODES.has(mode)) return `a non-canonical mode ${JSON.stringify(mode.slice(0, 24))}`;
  const why = componentProblem(name, mode === "120000", true);
  if (why) return why;
  if (top && /^[A-Za-z]:/.test(name)) return "a Windows drive prefix";
  return null;
}

/**
 * The same name as a case-insensitive file system (macOS, Windows) sees it:
 * case folded, HFS+-ignorable code points dropped, Unicode composed.
 */
export function foldedName(path: string): string {
  let out = "";
  for (const ch of path.normalize("NFC")) if (!HFS_IGNORED.has(ch.codePointAt(0) as number)) out += ch;
  return out.toLowerCase();
}
