// Runs `grex serve` through serveFromArgv (the fast path main.ts can take before
// loading the CLI adapter), so tests cover it whether or not main.ts uses it.
// Exit 64 = the fast path declined this argv. With GREX_TEST_MODULES=1 it
// prints, on stderr after serving, every module that got loaded.
import { serveFromArgv } from "../../src/mcp/serve-argv.ts";

const code = await serveFromArgv(process.argv.slice(2));
process.exitCode = code ?? 64;
if (process.env.GREX_TEST_MODULES === "1") process.stderr.write(`MODULES ${JSON.stringify(Object.keys(require.cache))}\n`);
