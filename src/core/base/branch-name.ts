// Which names git accepts for a branch: `git check-ref-format --branch`
// (refs.c check_refname_format on `refs/heads/<name>`, plus
// strbuf_check_branch_ref's refusal of a leading '-' and of `HEAD`).

/** Why git would refuse `name` as a branch name, in a clause, or null when it accepts it. */
export function branchNameProblem(name: string): string | null {
  if (name === "") return "it is empty";
  if (name.startsWith("-")) return "it starts with '-'";
  if (name === "HEAD") return "'HEAD' names the current commit, not a branch";
  if (name === "@") return "'@' alone is not a branch name";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: git refuses control characters in refs
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name)) return "it holds a space, a control character or one of ~ ^ : ? * [ \\";
  if (name.includes("..")) return "it holds '..'";
  if (name.includes("@{")) return "it holds '@{'";
  if (name.endsWith(".")) return "it ends with '.'";
  if (name.startsWith("/") || name.endsWith("/") || name.includes("//")) return "it has an empty path component";
  for (const part of name.split("/")) {
    if (part.startsWith(".")) return "a path component starts with '.'";
    if (part.endsWith(".lock")) return "a path component ends with '.lock'";
  }
  return null;
}
