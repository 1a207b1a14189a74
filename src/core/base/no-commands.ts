// A scope in which grex's git code runs no command a configuration names:
// no filter driver (smudge or clean), no hook. A dry run's temporary clone
// is checked out inside it, so a preview never runs anything, whatever any
// git config says. The scope follows one async call chain
// (AsyncLocalStorage), so a concurrent call in the same process (another MCP
// request) is not affected; node:async_hooks loads only when a scope opens.
import type { AsyncLocalStorage } from "node:async_hooks";

let scope: AsyncLocalStorage<true> | undefined;

/** Run `fn` with every configured command (filters, hooks) off. */
export function withoutConfiguredCommands<T>(fn: () => Promise<T>): Promise<T> {
  scope ??= new (import.meta.require("node:async_hooks") as typeof import("node:async_hooks")).AsyncLocalStorage();
  return scope.run(true, fn);
}

/** Whether the current call chain may run a command a git configuration names. */
export function configuredCommandsAllowed(): boolean {
  return scope?.getStore() !== true;
}
