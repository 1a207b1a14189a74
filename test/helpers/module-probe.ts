// Runs one CLI invocation in process, then prints (on stderr, as JSON) the
// node_modules packages that got loaded. Used by test/unit/startup.test.ts.
const [entry, ...argv] = process.argv.slice(2);
if (entry === "main") {
  process.argv = [process.argv[0] as string, "grex", ...argv];
  await import("../../src/cli/main.ts");
} else {
  const { runCli } = await import("../../src/cli/run.ts");
  await runCli(argv, { stdout: () => {}, stderr: () => {} });
}
const loaded = Object.keys(require.cache)
  .filter((k) => k.includes("node_modules"))
  .map((k) => k.replace(/.*node_modules\//, "").split("/").slice(0, k.includes("/@") ? 2 : 1).join("/"));
process.stderr.write(`${JSON.stringify([...new Set(loaded)].sort())}\n`);
export {};
