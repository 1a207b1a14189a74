// `grex completion bash|zsh|fish`: completion scripts generated from the verb
// table (verbs, each verb's flags, the universal flags) plus the workspace's
// pack ids, which the scripts ask for at completion time (`grex completion ids`).
import { usageError } from "../core/base/errors.ts";
import { loadWorkspaceView } from "../core/workspace/packs.ts";
import { findWorkspace } from "../core/base/workspace.ts";
import { CLI_VERBS } from "./verbs.ts";
import type { CliFlag } from "../verbs/types.ts";
import type { BuiltinIO } from "./builtin-io.ts";
import { BUILTINS, summary } from "./help.ts";
import { didYouMean } from "./suggest.ts";

const SHELLS = ["bash", "zsh", "fish"] as const;
type Shell = (typeof SHELLS)[number];

interface Word {
  name: string;
  description: string;
  flags: readonly CliFlag[];
  /** Positionals complete to pack ids (`rm <id>`, `sync [...ids]`). */
  ids: boolean;
  /** Positionals complete to these words. */
  words: readonly string[];
}

function table(): Word[] {
  const verbs: Word[] = CLI_VERBS.map((v) => ({
    name: v.name,
    description: summary(v.description),
    flags: v.cli.flags,
    ids: v.cli.positionals.some((p) => p === "id" || p === "...ids"),
    words: [],
  }));
  const builtins: Word[] = BUILTINS.map((b) => ({
    name: b.name,
    description: summary(b.description),
    flags: [],
    ids: false,
    words: b.name === "help" ? CLI_VERBS.map((v) => v.name) : b.name === "completion" ? [...SHELLS] : [],
  }));
  return [...verbs, ...builtins];
}

/** `-v, --verbose` → ["-v", "--verbose"]. */
const spellings = (f: CliFlag) => f.flag.split(/[ ,]+/).filter((p) => p.startsWith("-"));
const words = (flags: readonly CliFlag[]) => flags.flatMap(spellings).join(" ");
/** Single-quoted for sh, bash, zsh and fish alike (none of our texts hold a quote after this). */
const quote = (s: string) => `'${s.replaceAll("'", "")}'`;

function bash(all: Word[], universal: readonly CliFlag[]): string {
  const cases = all.map((w) => `    ${w.name}) flags=${quote(words(w.flags))}; words=${quote(w.words.join(" "))}; ids=${w.ids ? 1 : 0} ;;`);
  return `# grex completion for bash. Load it with: source <(grex completion bash)
_grex() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" verb="" i flags="" words="" ids=0
  local universal=${quote(words(universal))}
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in -*) ;; *) verb="\${COMP_WORDS[i]}"; break ;; esac
  done
  if [[ -z "$verb" ]]; then
    if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$universal" -- "$cur"))
    else COMPREPLY=($(compgen -W ${quote(all.map((w) => w.name).join(" "))} -- "$cur")); fi
    return 0
  fi
  case "$verb" in
${cases.join("\n")}
  esac
  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$flags $universal" -- "$cur")); return 0; fi
  if [[ $ids == 1 ]]; then words="$words $(command grex completion ids 2>/dev/null)"; fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _grex grex
`;
}

function zsh(all: Word[], universal: readonly CliFlag[]): string {
  const cases = all.map((w) => `      ${w.name}) flags=(${words(w.flags)}); cands=(${w.words.join(" ")}); ids=${w.ids ? 1 : 0} ;;`);
  const described = all.map((w) => quote(`${w.name}:${w.description.replaceAll(":", "\\:")}`)).join(" ");
  return `#compdef grex
# grex completion for zsh. Load it with: source <(grex completion zsh) (after compinit)

# Candidates for the word being completed: _grex_words <verb or ""> <prefix>.
_grex_words() {
  local verb=$1 prefix=$2 ids=0
  local -a flags cands universal out
  universal=(${words(universal)})
  if [[ -z $verb ]]; then
    if [[ $prefix == -* ]]; then out=($universal); else out=(${all.map((w) => w.name).join(" ")}); fi
  else
    case $verb in
${cases.join("\n")}
    esac
    if [[ $prefix == -* ]]; then out=($flags $universal)
    else
      (( ids )) && cands+=(\${(f)"$(command grex completion ids 2>/dev/null)"})
      out=($cands)
    fi
  fi
  print -rl -- \${(M)out:#\${prefix}*}
}

_grex() {
  local verb="" w
  for w in \${words[2,CURRENT-1]}; do
    [[ $w != -* ]] && { verb=$w; break; }
  done
  if [[ -z $verb && $PREFIX != -* ]]; then
    local -a verbs
    verbs=(${described})
    _describe -t verbs 'grex verb' verbs
    return
  fi
  local -a cands
  cands=(\${(f)"$(_grex_words "$verb" "$PREFIX")"})
  compadd -a cands
}
compdef _grex grex
`;
}

function fish(all: Word[], universal: readonly CliFlag[]): string {
  const names = all.map((w) => w.name).join(" ");
  const flagLine = (f: CliFlag, cond: string) => {
    const parts = spellings(f).map((s) => (s.startsWith("--") ? `-l ${s.slice(2)}` : `-s ${s.slice(1)}`));
    const value = /</.test(f.flag) ? " -r" : "";
    return `complete -c grex${cond} ${parts.join(" ")}${value} -d ${quote(f.description)}`;
  };
  const lines = [
    "# grex completion for fish. Load it with: grex completion fish | source",
    "complete -c grex -f",
    ...all.map((w) => `complete -c grex -n "not __fish_seen_subcommand_from ${names}" -a ${w.name} -d ${quote(w.description)}`),
    ...universal.map((f) => flagLine(f, "")),
    ...all.flatMap((w) => w.flags.map((f) => flagLine(f, ` -n "__fish_seen_subcommand_from ${w.name}"`))),
    ...all.filter((w) => w.words.length > 0).map((w) => `complete -c grex -n "__fish_seen_subcommand_from ${w.name}" -a ${quote(w.words.join(" "))}`),
    `complete -c grex -n "__fish_seen_subcommand_from ${all.filter((w) => w.ids).map((w) => w.name).join(" ")}" -a "(command grex completion ids 2>/dev/null)"`,
  ];
  return `${lines.join("\n")}\n`;
}

export function completionScript(shell: Shell, universal: readonly CliFlag[]): string {
  const all = table();
  return shell === "bash" ? bash(all, universal) : shell === "zsh" ? zsh(all, universal) : fish(all, universal);
}

/** `grex completion <shell>` prints the script; `grex completion ids` lists pack ids (quietly empty outside a workspace). */
export async function completionCommand(args: readonly string[], io: BuiltinIO, universal: readonly CliFlag[]): Promise<number> {
  const what = args.find((a) => !a.startsWith("-"));
  if (what === "ids") {
    const manifestAt = args.indexOf("--manifest");
    const ws = findWorkspace(io.cwd, manifestAt === -1 ? undefined : args[manifestAt + 1]);
    const view = await loadWorkspaceView(ws, () => {});
    io.stdout(view.packs.map((p) => `${p.id}\n`).join(""));
    return 0;
  }
  if (what === undefined || !(SHELLS as readonly string[]).includes(what)) {
    const hint = what === undefined ? "" : didYouMean(what, SHELLS);
    throw usageError(`${what === undefined ? "No shell given" : `Unknown shell '${what}'`}.${hint} Use \`grex completion bash\`, \`zsh\` or \`fish\`.`);
  }
  io.stdout(completionScript(what as Shell, universal));
  return 0;
}
