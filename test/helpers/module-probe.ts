// Runs one CLI invocation in process, then prints (on stderr, as JSON) the
// node_modules packages that got loaded. Used by test/unit/startup.test.ts.
// The line before it lists which of process.stdout/stderr/stdin were touched
// (building them loads Node's stream machinery, ~10 ms in a compiled binary).
const touched = new Set<string>();
for (const name of ["stdout", "stderr", "stdin"] as const) {
  const own = Object.getOwnPropertyDescriptor(process, name);
  let proto: object | null = process;
  let desc = own;
  while (!desc && proto) {
    proto = Object.getPrototypeOf(proto);
    desc = proto ? Object.getOwnPropertyDescriptor(proto, name) : undefined;
  }
  if (!desc) continue;
  Object.defineProperty(process, name, {
    configurable: true,
    get() {
      touched.add(name);
      return desc.get ? desc.get.call(process) : desc.value;
    },
  });
}
const [entry, ...argv] = process.argv.slice(2);
if (entry === "main") {
  process.argv = [process.argv[0] as string, "grex", ...argv];
  // main.ts leaves with process.exit once its output is out: held back here so the report below still prints.
  const exit = process.exit;
  process.exit = ((code?: number) => {
    process.exitCode = code;
  }) as typeof process.exit;
  await import("../../src/cli/main.ts");
  process.exit = exit;
} else {
  const { runCli } = await import("../../src/cli/run.ts");
  await runCli(argv, { stdout: () => {}, stderr: () => {} });
}
const loaded = Object.keys(require.cache)
  .filter((k) => k.includes("node_modules"))
  .map((k) => k.replace(/.*node_modules\//, "").split("/").slice(0, k.includes("/@") ? 2 : 1).join("/"));
const streams = [...touched].sort();
await Bun.write(Bun.stderr, `streams ${JSON.stringify(streams)}\n${JSON.stringify([...new Set(loaded)].sort())}\n`);
export {};
