// The transfer time limits as universal flags. The git transport reads its
// limits from the process environment (so the MCP server and every pack of a
// sync share them); a flag sets its variable for this one command, over any
// value the environment already had.
import type { CliFlag } from "../verbs/types.ts";

const FLAGS: Array<[flag: string, env: string, description: string]> = [
  ["--http-connect-timeout", "GREX_HTTP_CONNECT_TIMEOUT", "Seconds a server may take to start answering (30)"],
  ["--http-low-speed-limit", "GREX_HTTP_LOW_SPEED_LIMIT", "Bytes/s under which a transfer stalls (1024)"],
  ["--http-low-speed-time", "GREX_HTTP_LOW_SPEED_TIME", "Seconds a stall may last (30; 0 = off)"],
];

export const TRANSFER_FLAGS: CliFlag[] = FLAGS.map(([flag, , description]) => ({ flag: `${flag} <${flag.endsWith("limit") ? "bytes" : "s"}>`, description }));

/** Copy the transfer flags in `argv` (before any `--`) into `env`; the last one given wins. */
export function applyTransferFlags(argv: readonly string[], env: Record<string, string | undefined>): void {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--") return;
    for (const [flag, name] of FLAGS) {
      if (a === flag && i + 1 < argv.length) env[name] = argv[++i];
      else if (a.startsWith(`${flag}=`)) env[name] = a.slice(flag.length + 1);
    }
  }
}
