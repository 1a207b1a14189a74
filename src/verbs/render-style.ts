// Colour for people at a terminal. Off with --plain, --json, a non-TTY stdout
// or NO_COLOR set to anything non-empty (https://no-color.org).

export interface Paint {
  bold(s: string): string;
  dim(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  red(s: string): string;
  cyan(s: string): string;
}

const sgr = (on: number, off: number) => (s: string) => (s === "" ? s : `\x1b[${on}m${s}\x1b[${off}m`);
const same = (s: string) => s;

const COLOURS: Paint = { bold: sgr(1, 22), dim: sgr(2, 22), green: sgr(32, 39), yellow: sgr(33, 39), red: sgr(31, 39), cyan: sgr(36, 39) };
const PLAIN: Paint = { bold: same, dim: same, green: same, yellow: same, red: same, cyan: same };

export const paint = (color: boolean | undefined): Paint => (color ? COLOURS : PLAIN);

/** Whether to colour stdout: a terminal, pretty output, and NO_COLOR unset or empty. */
export const colorWanted = (pretty: boolean, env: Record<string, string | undefined>): boolean =>
  pretty && (env.NO_COLOR === undefined || env.NO_COLOR === "");

/** The visible width of text that may hold colour codes. */
export const visibleWidth = (s: string): number => s.replace(/\x1b\[[0-9;]*m/g, "").length;
