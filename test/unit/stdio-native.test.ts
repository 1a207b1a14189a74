// The native stdout writer: whole writes in call order, waiting on a slow
// reader, and a reader that goes away (EPIPE) is noticed once, quietly.
import { expect, test } from "bun:test";
import { join } from "node:path";

const WRITER = join(import.meta.dir, "..", "helpers", "native-writer.ts");

test("every line arrives whole and in order, even through a slow reader", async () => {
  const n = 5000;
  const p = Bun.spawn([process.execPath, WRITER, String(n)], { stdout: "pipe", stderr: "pipe" });
  const reader = p.stdout.getReader();
  const parts: Uint8Array[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parts.push(value);
    if (parts.length % 4 === 0) await Bun.sleep(2); // back-pressure: the writer must wait, not drop
  }
  expect(await p.exited).toBe(0);
  const lines = Buffer.concat(parts).toString("utf8").split("\n");
  expect(lines.pop()).toBe("");
  expect(lines.length).toBe(n);
  lines.forEach((l, i) => expect(l).toBe(`line ${i} ${"x".repeat(i % 200)}`));
  expect(await new Response(p.stderr).text()).toBe("done failures=0 error=none\n");
});

test("a reader that closes early: the writer stops quietly, reports the error once, and the process exits normally", async () => {
  const p = Bun.spawn([process.execPath, WRITER, "200000"], { stdout: "pipe", stderr: "pipe" });
  const reader = p.stdout.getReader();
  await reader.read();
  await reader.cancel(); // closes our end of the pipe
  expect(await p.exited).toBe(0);
  // EPIPE from a pipe; Bun may hand the child a socket pair instead, and a socket
  // closed with unread data in it answers ECONNRESET: the same "reader went away".
  expect(await new Response(p.stderr).text()).toMatch(/^done failures=1 error=(EPIPE|ECONNRESET)\n$/);
});
