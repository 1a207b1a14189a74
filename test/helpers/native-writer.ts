// Writes N numbered lines through grex's native stdout writer, in bursts, then
// reports on stderr whether the writer failed. Used by test/unit/stdio-native.test.ts.
import { stderr, stdout } from "../../src/core/base/stdio-native.ts";

const n = Number(process.argv[2] ?? 1000);
let failures = 0;
stdout.onError(() => failures++);
for (let i = 0; i < n; i++) {
  stdout.write(`line ${i} ${"x".repeat(i % 200)}\n`);
  if (i % 97 === 0) await Bun.sleep(0); // let some chunks go out while more queue up
}
await stdout.flush();
stderr.write(`done failures=${failures} error=${(stdout.error as NodeJS.ErrnoException | null)?.code ?? "none"}\n`);
await stderr.flush();
