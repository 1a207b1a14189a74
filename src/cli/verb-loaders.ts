// One loader per CLI verb, by name: a call that names its verb loads that
// verb's module only, not the whole table (each verb module builds its
// schemas when loaded). The table (src/verbs/index.ts + src/cli/verbs.ts)
// stays the definition; a test checks that this map names exactly its verbs
// and yields the very same objects.
import type { VerbDef } from "../verbs/types.ts";

const LOADERS: Record<string, () => Promise<VerbDef>> = {
  init: async () => (await import("../verbs/init.ts")).initVerb,
  add: async () => (await import("../verbs/add.ts")).addVerb,
  rm: async () => (await import("../verbs/rm.ts")).rmVerb,
  ls: async () => (await import("../verbs/ls.ts")).lsVerb,
  status: async () => (await import("../verbs/status.ts")).statusVerb,
  sync: async () => (await import("../verbs/sync.ts")).syncVerb,
  update: async () => (await import("../verbs/update.ts")).updateVerb,
  doctor: async () => (await import("../verbs/doctor.ts")).doctorVerb,
  import: async () => (await import("../verbs/import.ts")).importVerb,
  run: async () => (await import("../verbs/run.ts")).runVerb,
  exec: async () => (await import("../verbs/exec.ts")).execVerb,
  teardown: async () => (await import("../verbs/teardown.ts")).teardownVerb,
  serve: async () => (await import("../mcp/serve-verb.ts")).serveVerb,
  mcp: async () => (await import("../mcp/client-verb.ts")).mcpVerb,
};

export const LOADABLE_VERBS: readonly string[] = Object.keys(LOADERS);

/** The CLI verb called `name`, loading only its module; undefined for any other word. */
export function loadVerb(name: string): Promise<VerbDef> | undefined {
  return Object.hasOwn(LOADERS, name) ? (LOADERS[name] as () => Promise<VerbDef>)() : undefined;
}
