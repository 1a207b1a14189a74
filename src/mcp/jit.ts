// The compiled binary starts with JavaScriptCore's tier-up thresholds scaled
// up (scripts/compile.ts): right for a one-shot command, whose code runs too
// few times to repay compiling it. A server stays and runs the same verbs for
// hours, so once it is interactive it asks for the normal policy again.
export function normalJitPolicy(): void {
  // Older Bun releases have no such call; they never started with another policy either.
  Bun.unsafe.setJITPolicy?.(1);
}
