// One test file's workspace and smart-HTTP server: a TestWorkspace and a
// server for its `served/` directory, made before the file's tests and
// stopped and removed after them. `use` receives them once they exist.
import { afterAll, beforeAll } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type GitHttpServer, startGitHttpServer } from "./git-http-server.ts";
import { TestWorkspace } from "./workspace.ts";

export interface ServedWorkspace {
  t: TestWorkspace;
  /** The directory the server serves (repositories are published under it). */
  served: string;
  server: GitHttpServer;
}

export function servedWorkspace(prefix: string, use: (f: ServedWorkspace) => void): void {
  let f: ServedWorkspace | null = null;
  beforeAll(async () => {
    const t = new TestWorkspace(prefix);
    const served = join(t.root, "served");
    mkdirSync(served);
    f = { t, served, server: await startGitHttpServer(served) };
    use(f);
  });
  afterAll(async () => {
    await f?.server.stop();
    f?.t.cleanup();
  });
}
