// Brings the submodules of one repository up the way `grex sync` does
// (updateSubmodules), for the kill tests: `<dir> <url> <killAfter>` SIGKILLs
// itself right after its <killAfter>-th rename(2) (every step grex commits a
// file or a directory with is one), so each boundary between two steps can be
// hit exactly; -1 never, and then first removes what a killed clone left, as
// `grex sync` does before it. Prints the count of renames it made when it finishes.
// (node:fs only through require, before anything imports it: a static import here would fix its bindings first.)
export {};
const fs = require("node:fs") as typeof import("node:fs");

const [dir, url, killAfterText] = process.argv.slice(2) as [string, string, string];
const killAfter = Number(killAfterText);
let renames = 0;
const rename = fs.renameSync;
fs.renameSync = (from: import("node:fs").PathLike, to: import("node:fs").PathLike) => {
  rename(from, to);
  renames++;
  if (renames === killAfter) process.kill(process.pid, "SIGKILL");
};
const { updateSubmodules } = await import("../../src/core/git/submodules.ts");
if (killAfter < 0) {
  const { deadClonesInside } = await import("../../src/core/git/clone.ts");
  for (const left of deadClonesInside(dir)) fs.rmSync(left, { recursive: true, force: true });
}
const done = await updateSubmodules(dir, url, new AbortController().signal, process.env);
await Bun.write(Bun.stdout, `${JSON.stringify({ renames, done: done.map((d) => [d.path, d.result]) })}\n`);
