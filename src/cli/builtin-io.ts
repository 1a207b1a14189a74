// What a built-in command (help, version, completion) gets to talk to: a leaf,
// so builtins.ts and the lazily loaded completion.ts share it without a cycle.
export interface BuiltinIO {
  stdout(text: string): void;
  cwd: string;
  env: Record<string, string | undefined>;
}
