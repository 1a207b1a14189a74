// The CLI adapter: argv → params (cac) → the verb table → output + exit code.
// Nothing verb-specific lives here.
import type { CAC, Command } from "cac";
import pkg from "../../package.json" with { type: "json" };
import { CancelledError, GrexError, toGrexError, usageError } from "../core/base/errors.ts";
import { PermitScheduler, resolveParallel } from "../core/locks/scheduler.ts";
import { stderr, stderrIsTTY, stdout, stdoutIsTTY } from "../core/base/stdio-native.ts";
import { makeContext } from "../verbs/context.ts";
import { invoke, type Outcome } from "../verbs/invoke.ts";
import { failureDocument, toJsonDocument } from "../verbs/serialize.ts";
import type { CliFlag, RenderStyle, VerbDef } from "../verbs/types.ts";
import { longFlagName, runBuiltin, verbWord } from "./builtins.ts";
import { fastArgv } from "./fast-argv.ts";
import { applyTransferFlags, TRANSFER_FLAGS } from "./transfer-flags.ts";
import { loadVerb } from "./verb-loaders.ts";
import { type CliProgress, cancelledMessage, makeProgress } from "./output.ts";
import { colorWanted } from "../verbs/render-style.ts";

export interface CliIO {
  stdout(text: string): void;
  stderr(text: string): void;
  cwd: string;
  env: Record<string, string | undefined>;
  /** Whether stdout / stderr are terminals (pretty output, progress). */
  stdoutTTY: boolean;
  stderrTTY: boolean;
}

// The terminal checks are getters: `--json` never needs them (node:tty costs ~4 ms to load).
const defaultIO = (): CliIO => ({
  stdout: (t) => stdout.write(t),
  stderr: (t) => stderr.write(t),
  cwd: process.cwd(),
  env: process.env,
  get stdoutTTY() {
    return stdoutIsTTY();
  },
  get stderrTTY() {
    return stderrIsTTY();
  },
});

// cac and the whole verb table load only when argv is not plain enough for fastArgv.
const cliVerbs = (): readonly VerbDef[] => (require("./verbs.ts") as typeof import("./verbs.ts")).CLI_VERBS;

/** Universal flags every verb accepts (SPEC §8). */
export const GLOBAL_FLAGS: CliFlag[] = [
  { flag: "--json", description: "Print one JSON document on stdout" },
  { flag: "--plain", description: "No colour, no Unicode" },
  { flag: "--dry-run", description: "Show what would change; touch nothing" },
  { flag: "--parallel <n>", description: "Packs processed at once (default: 8 or the CPU count if larger; 0 = unbounded)", number: true },
  { flag: "--filter <expr>", description: "Which packs: glob, tag=, name=, dirty, behind… (',' = all; repeated = any)", repeatable: true },
  { flag: "--manifest <path>", description: "Use this grex.jsonl (workspace = its directory)" },
  { flag: "-v, --verbose", description: "Diagnostics on stderr (-vv, -vvv for more)" },
  ...TRANSFER_FLAGS,
];

/** `--no-clone` → `clone`, `--from-repos-json <file>` → `from_repos_json`. */
export function flagParam(flag: CliFlag): string {
  return flagKey(longFlagName(flag.flag) ?? flag.flag);
}

const flagKey = (long: string) => (long.startsWith("--no-") ? long.slice(5) : long.startsWith("--") ? long.slice(2) : long).replaceAll("-", "_");

const takesValue = (flag: CliFlag) => /[<[]/.test(flag.flag);

/**
 * Raw string values of a value flag (cac/mri turn "1.10" into the number 1.1,
 * which would corrupt refs and tags), in argv order, before any `--`.
 */
function rawValues(argv: string[], long: string, optionalValue = false): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--") break;
    const next = argv[i + 1];
    if (a === long && next !== undefined && !(optionalValue && next.startsWith("-"))) {
      out.push(next);
      i++;
    }
    else if (a.startsWith(`${long}=`)) out.push(a.slice(long.length + 1));
  }
  return out;
}

// Not `.at(-1)`: a builtin's first call costs ~0.3 ms in a compiled binary, and every call goes through here.
const lastOf = (xs: readonly string[]): string | undefined => xs[xs.length - 1];

/** `-v`, `-vv`, … (a loop: this runs on every call, before anything else needs a regex). */
function isVs(a: string): boolean {
  if (a.length < 2 || a[0] !== "-") return false;
  for (let i = 1; i < a.length; i++) if (a[i] !== "v") return false;
  return true;
}

function verbosity(argv: string[]): number {
  let n = 0;
  for (const a of argv) {
    if (a === "--") break;
    if (isVs(a)) n += a.length - 1;
    else if (a === "--verbose") n++;
  }
  return n;
}

/**
 * The cac parser for every verb, or for `only` one: cac parses argv once per
 * command it tries, so a known verb word gets a parser with just that verb.
 */
export function buildCli(only?: VerbDef): CAC {
  const cli = (require("cac") as typeof import("cac")).cac("grex");
  for (const f of GLOBAL_FLAGS) cli.option(f.flag, f.description);
  cli.help();
  for (const verb of only ? [only] : cliVerbs()) {
    const cmd: Command = cli.command(`${verb.name} ${verb.cli.args}`.trim(), verb.description);
    for (const f of verb.cli.flags) cmd.option(f.flag, f.description);
  }
  return cli;
}

/** Map cac's parse into the verb's params object (snake_case keys, raw strings). */
export function collectParams(verb: VerbDef, args: readonly string[], options: Record<string, unknown>, argv: string[]) {
  const keys = new Set(Object.keys(verb.params.entries));
  const params: Record<string, unknown> = {};
  const rest = Array.isArray(options["--"]) ? (options["--"] as string[]) : [];
  const positionals = verb.cli.positionals;
  for (let i = 0; i < positionals.length; i++) {
    const name = positionals[i] as string;
    if (name.startsWith("...")) {
      const all = [...args.slice(i), ...rest];
      if (all.length > 0) params[name.slice(3)] = all;
    } else if (args[i] !== undefined) params[name] = args[i];
  }
  for (const flag of [...GLOBAL_FLAGS, ...verb.cli.flags]) {
    const key = flagParam(flag);
    if (!keys.has(key)) continue; // universal flags a verb does not use are accepted and ignored
    const camel = key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    const value = options[camel];
    if (value === undefined) continue;
    if (!takesValue(flag)) {
      // normaliseSwitches lets only true/false through; mri leaves dashed names' values as strings.
      const last = Array.isArray(value) ? value.at(-1) : value;
      params[key] = last === true || last === "true";
      continue;
    }
    const long = longFlagName(flag.flag) as string;
    const optionalValue = flag.flag.includes("[");
    const raws = rawValues(argv, long, optionalValue);
    if (raws.length === 0) {
      // `--http` alone: an optional-value flag given without its value.
      if (optionalValue) {
        params[key] = true;
        continue;
      }
      throw usageError(`Flag ${long} needs a value.`, { field: key });
    }
    if (flag.number) {
      const last = raws[raws.length - 1] as string;
      const n = Number(last);
      if (!/^\d+$/.test(last) || !Number.isSafeInteger(n)) {
        throw usageError(`Flag ${long} takes a whole number, got '${last}'; see \`grex ${verb.name} --help\`.`, { field: key });
      }
      params[key] = n;
    } else {
      params[key] = flag.repeatable ? raws : raws[raws.length - 1];
    }
  }
  return params;
}

/** Long names of the switches (flags without a value) of every verb and the universal ones. */
function booleanFlagNames(): Set<string> {
  const names = new Set<string>();
  const valued = new Set<string>();
  for (const f of [...GLOBAL_FLAGS, ...cliVerbs().flatMap((v) => v.cli.flags)]) {
    const long = f.flag.split(/[ ,]+/).find((p) => p.startsWith("--"));
    if (long === undefined || long.startsWith("--no-")) continue;
    (takesValue(f) ? valued : names).add(long);
  }
  for (const n of valued) names.delete(n);
  return names;
}

/**
 * `--dry-run` → `--dry-run=true` before cac sees it: cac hands mri camelCased
 * boolean names while mri matches the dashed ones, so a dashed switch would
 * otherwise take the next word as its value (`sync --dry-run tools` syncing all).
 */
export function normaliseSwitches(argv: string[]): string[] {
  const switches = booleanFlagNames();
  const end = argv.includes("--") ? argv.indexOf("--") : argv.length;
  return argv.map((a, i) => {
    if (i >= end) return a;
    if (switches.has(a)) return `${a}=true`;
    const eq = a.indexOf("=");
    if (a.startsWith("--") && eq > 0 && switches.has(a.slice(0, eq)) && !["true", "false"].includes(a.slice(eq + 1))) {
      throw usageError(`Flag ${a.slice(0, eq)} is true or false, got '${a.slice(eq + 1)}'.`, { field: flagKey(a.slice(0, eq)) });
    }
    return a;
  });
}

/** What one CLI call knows about itself as it goes: argv (after any move), the verb word for errors, the progress line. */
interface CliCall {
  argv: string[];
  io: CliIO;
  /** Only grex's own flags count: what follows `--` belongs to a child command. */
  beforeDashes: string[];
  json: boolean;
  plain: boolean;
  pretty: boolean;
  verbose: number;
  verbName: string;
  progress: CliProgress | undefined;
  /** Whether the verb wrote rows as it went: its final rendering leaves them out. */
  rowsStreamed?: boolean;
}

interface ReadVerb {
  verb: VerbDef;
  args: readonly string[];
  options: Record<string, unknown>;
}

export async function runCli(argv: string[], ioOverride?: Partial<CliIO>): Promise<number> {
  // Copy descriptors, not values, so the default getters stay lazy.
  const io = Object.defineProperties(defaultIO(), Object.getOwnPropertyDescriptors(ioOverride ?? {}));
  const beforeDashes = argv.includes("--") ? argv.slice(0, argv.indexOf("--")) : argv;
  const json = beforeDashes.includes("--json");
  const plain = beforeDashes.includes("--plain") || json || !io.stdoutTTY;
  const call: CliCall = { argv, io, beforeDashes, json, plain, pretty: !json && !plain, verbose: verbosity(argv), verbName: "grex", progress: undefined };
  if (beforeDashes.includes("--version") || beforeDashes.includes("-V")) {
    io.stdout(`grex ${pkg.version}\n`);
    return 0;
  }
  try {
    const builtin = await runBuiltin(argv, io, GLOBAL_FLAGS);
    if (builtin !== undefined) return builtin;
    const read = await readVerb(call);
    if (read === undefined) return 0; // cac printed help
    call.verbName = read.verb.name;
    // The git transport reads its limits from the process environment.
    applyTransferFlags(call.argv, process.env);
    return printOutcome(call, read.verb, await invokeVerb(call, read));
  } catch (raw) {
    return reportThrown(call, raw);
  }
}

/** Phase 1: which verb and its raw arguments. A plain argv is read without cac; anything else goes through cac, errors and all. */
async function readVerb(call: CliCall): Promise<ReadVerb | undefined> {
  const word = verbWord(call.argv, GLOBAL_FLAGS);
  const named = word === undefined ? undefined : await loadVerb(word);
  const fast = named === undefined ? undefined : fastArgv(call.argv, named, GLOBAL_FLAGS);
  return named !== undefined && fast !== undefined ? { verb: named, ...fast } : await parseWithCac(call, named);
}

/** argv read by cac (with its checks and wording); undefined when cac printed help. */
async function parseWithCac(call: CliCall, named: VerbDef | undefined): Promise<ReadVerb | undefined> {
  // Only a `--` can need the move below: its module loads only then.
  const suggest = call.argv.includes("--") ? await import("./suggest.ts") : undefined;
  const parse = (cli: CAC): ReturnType<CAC["parse"]> => {
    // cac prints help and version with console.info; route them through our stdout.
    const info = console.info;
    console.info = (...parts: unknown[]) => call.io.stdout(`${parts.join(" ")}\n`);
    try {
      let parsed = cli.parse(["grex", "grex", ...normaliseSwitches(call.argv)], { run: false });
      // `grex exec -- git log -1` means `grex exec git -- log -1`.
      const moved = suggest?.moveCommandAfterDashes(call.argv, parsed.args, cli.matchedCommand?.name, cliVerbs());
      if (moved) parsed = cli.parse(["grex", "grex", ...normaliseSwitches((call.argv = moved))], { run: false });
      return parsed;
    } finally {
      console.info = info;
    }
  };
  // The verb word picks the one command to build; anything else gets them all (and cac's own verdict).
  let cli = buildCli(named);
  let parsed = parse(cli);
  if (named && !cli.matchedCommand) parsed = parse((cli = buildCli()));
  const options = parsed.options as Record<string, unknown>;
  if (options.help) return undefined;
  const command = cli.matchedCommand;
  if (!command) {
    const first = parsed.args[0];
    if (first === undefined) throw usageError("No verb given; run `grex help` to see the verbs.");
    throw (await import("./help.ts")).unknownVerb(String(first));
  }
  call.verbName = command.name;
  const verb = cliVerbs().find((v) => v.name === command.name);
  if (!verb) throw usageError(`Unknown verb '${command.name}'; run \`grex --help\` to see the verbs.`);
  try {
    command.checkUnknownOptions();
    command.checkRequiredArgs();
    command.checkUnusedArgs();
  } catch (err) {
    throw await cacUsageError(err, call.argv, verb, command);
  }
  return { verb, args: parsed.args, options };
}

/** cac's wording, made into one sentence that names the verb and the way out. */
async function cacUsageError(err: unknown, argv: string[], verb: VerbDef, command: Command): Promise<GrexError> {
  const msg = (err instanceof Error ? err.message : String(err)).replace(/\.$/, "");
  const unknown = (await import("./suggest.ts")).explainUnknownOption(msg, argv, verb, GLOBAL_FLAGS);
  if (unknown) return unknown;
  const what = msg.startsWith("missing required args")
    ? `Missing a required argument: the usage is \`grex ${command.rawName}\``
    : msg.startsWith("Unused args: ")
      ? `Unexpected argument${msg.includes(",") ? "s" : ""} ${msg.slice("Unused args: ".length)} for \`grex ${verb.name}\``
      : `${msg} for \`grex ${verb.name}\``;
  return usageError(`${what}; see \`grex ${verb.name} --help\`.`);
}

/** Phase 2: the call's context (workspace, scheduler, warnings, streamed rows) and the one invoke path, under Ctrl-C. */
async function invokeVerb(call: CliCall, { verb, args, options }: ReadVerb): Promise<Outcome> {
  const { argv, io, json, pretty, verbose } = call;
  const rawParallel = typeof options.parallel === "undefined" ? undefined : lastOf(rawValues(argv, "--parallel"));
  if (rawParallel !== undefined && !/^\d+$/.test(rawParallel)) {
    throw usageError(`Flag --parallel takes a whole number of packs at once (0 = no limit), got '${rawParallel}'; see \`grex ${verb.name} --help\`.`, { field: "parallel" });
  }
  const parallelFlag = rawParallel === undefined ? undefined : Number(rawParallel);
  const ctx = makeContext({
    cwd: io.cwd,
    manifest: lastOf(rawValues(argv, "--manifest")),
    scheduler: new PermitScheduler(resolveParallel(parallelFlag, io.env)),
    env: io.env,
    surface: "cli",
    warn: (m) => io.stderr(`grex: warning: ${m}\n`),
    debug: (level, m) => {
      if (level <= verbose) io.stderr(`grex: ${m}\n`);
    },
    live: pretty ? io.stdout : undefined,
    rows: json
      ? undefined
      : (render) => {
          const text = render(renderStyle(call));
          if (text === "") return;
          call.rowsStreamed = true;
          const clear = call.progress?.clear() ?? "";
          io.stdout(`${io.stdoutTTY ? clear : ""}${text}\n`);
        },
  });
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once("SIGINT", onSigint);
  const showProgress = !json && !call.beforeDashes.includes("--plain") && io.stderrTTY;
  const progress = makeProgress(showProgress, io.stderr, verb.name, showProgress ? process.stderr.columns || 80 : 80);
  call.progress = progress;
  // `status` beside a running `grex serve` asks it first (resident-client.ts); GREX_NO_SERVE=1 turns that off.
  const served = verb.name === "status" && io.env.GREX_NO_SERVE !== "1" ? await askServe((m) => ctx.debug(1, m)) : undefined;
  try {
    const run = () => invoke(verb, collectParams(verb, args, options, argv), { surface: "cli", ctx, signal: abort.signal, progress });
    // Objects, bytes and files of long git work join the line only where someone sees it.
    return showProgress ? await (await import("../core/base/activity.ts")).withActivitySink(progress.activity, run) : await run();
  } finally {
    served?.();
    progress.done();
    process.off("SIGINT", onSigint);
  }
}

const renderStyle = (call: CliCall): RenderStyle => ({
  plain: call.plain,
  streamed: call.pretty,
  rowsStreamed: call.rowsStreamed === true,
  color: colorWanted(call.pretty, call.io.env),
  home: call.io.env.HOME,
  cwd: call.io.cwd,
});

/** Phase 3: the document or the text, and the exit code. */
function printOutcome(call: CliCall, verb: VerbDef, outcome: Outcome): number {
  const { io } = call;
  if (verb.ownsStdout && outcome.ok) return 0;
  if (call.json) io.stdout(`${toJsonDocument(outcome.document)}\n`);
  else if (outcome.render) {
    const text = outcome.render(renderStyle(call));
    if (text !== "") io.stdout(`${text}\n`);
  }
  if (!outcome.ok) {
    io.stderr(`grex: ${outcome.error.message}\n`);
    return outcome.error.exitCode;
  }
  return 0;
}

/** A usage error, a cancel or an internal error thrown on the way: one sentence (the stack only with -v), and its exit code. */
function reportThrown(call: CliCall, raw: unknown): number {
  const { io, progress, verbName } = call;
  const thrown = toGrexError(raw);
  // A cancel that says what it cut short keeps its own sentence.
  const own = thrown.kind === "cancelled" && thrown.message !== new CancelledError().message;
  const err = thrown.kind === "cancelled" && progress !== undefined && !own ? new CancelledError(cancelledMessage(verbName, progress)) : thrown;
  if (call.verbose >= 1 && !(raw instanceof GrexError) && raw instanceof Error && raw.stack) io.stderr(`${raw.stack}\n`);
  io.stderr(`grex: ${err.message}\n`);
  if (call.json) io.stdout(`${toJsonDocument(failureDocument(verbName, err, "cli"))}\n`);
  return err instanceof CancelledError ? 130 : err.exitCode;
}

/** Install the client that asks a running `grex serve` for dirty answers; the function returned removes it. */
async function askServe(debug: (m: string) => void): Promise<() => void> {
  const [{ ServeClient }, { setDirtyOracle }] = await Promise.all([import("../core/git/worktree/resident-client.ts"), import("../core/git/worktree/dirty-oracle.ts")]);
  const client = new ServeClient(process.env, pkg.version);
  setDirtyOracle(client);
  return () => {
    setDirtyOracle(null);
    client.close();
    const { asked, scanned } = client.counters;
    if (asked > 0) debug(`grex serve answered for ${asked} pack(s); ${scanned} scanned here`);
  };
}
