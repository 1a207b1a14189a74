// stdout for a reader that may go away (`grex ls --json | head`, a pager quit
// early): as git does, grex stops writing and ends quietly. Only the output is
// dropped; the verb's work (and its temp + rename writes) runs to the end.
import { errnoCode } from "../core/errors.ts";

let closed = false;
let listening = false;

const onClosed = (err: unknown) => {
  if (errnoCode(err) !== "EPIPE") throw err;
  closed = true;
};

export function writeStdout(text: string): void {
  if (closed) return;
  if (!listening) {
    listening = true;
    process.stdout.on("error", onClosed);
  }
  try {
    process.stdout.write(text);
  } catch (err) {
    onClosed(err);
  }
}
