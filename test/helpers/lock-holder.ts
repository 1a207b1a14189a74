// Test helper: take one grex lock in a separate process, print "held", then
// keep it until killed. Usage:
//   bun test/helpers/lock-holder.ts <workspace-root> workspace|workspace-shared [purpose]
//   bun test/helpers/lock-holder.ts <workspace-root> pack|backend <dir>
//   bun test/helpers/lock-holder.ts <workspace-root> manifest
//   bun test/helpers/lock-holder.ts <workspace-root> repo <pack dir>   (the shared repository lock of its clone)
import { tryAcquireWorkspaceLock, withBackendLock, withManifestLock, withPackLock, withSharedRepoLock } from "../../src/core/locks/locks.ts";
import { workspaceAt } from "../../src/core/base/workspace.ts";

const [root, kind, arg] = process.argv.slice(2);
if (!root || !kind) {
  process.stderr.write("usage: lock-holder.ts <workspace-root> <workspace|pack|backend|manifest> [dir|purpose]\n");
  process.exit(2);
}
const ws = workspaceAt(root);
const forever = new Promise<never>(() => {
  setInterval(() => {}, 1 << 30); // keep the event loop alive
});
const hold = async () => {
  process.stdout.write("held\n");
  await forever;
};
const signal = new AbortController().signal;

switch (kind) {
  case "workspace":
    tryAcquireWorkspaceLock(ws, arg ?? "sync");
    await hold();
    break;
  case "workspace-shared":
    tryAcquireWorkspaceLock(ws, arg ?? "run", "shared");
    await hold();
    break;
  case "pack":
    await withPackLock(ws, arg ?? root, signal, hold);
    break;
  case "backend":
    await withBackendLock(ws, arg ?? root, signal, hold);
    break;
  case "manifest":
    await withManifestLock(ws, signal, hold);
    break;
  case "repo": {
    const { sharedLockOf } = await import("../../src/core/sync/repo-lock.ts");
    const path = sharedLockOf(arg ?? root);
    if (path === null) throw new Error(`${arg} has no repository shared with other work trees`);
    await withSharedRepoLock(path, signal, hold);
    break;
  }
  default:
    process.stderr.write(`unknown lock kind ${kind}\n`);
    process.exit(2);
}
