// `npm run pack:npm`: grex's npm distribution for this machine, in dist/npm/
// (or the directory after --out):
//   grex-metarepo-<version>.tgz               the launcher (npm/launcher.cjs as
//       bin/launcher.cjs and as the `grex` command bin/grex.cjs), the install
//       step that puts the platform binary in place of bin/grex.cjs
//       (npm/install.cjs as bin/install.cjs, the `postinstall`), the sources
//       bundled for Bun (lib/), schema/, docs/ and README.md; no dependencies,
//       and every platform package below as an optional dependency pinned to
//       the same version;
//   grex-metarepo-<os>-<cpu>-<version>.tgz   this machine's compiled binary
//       (bin/grex), with `os`/`cpu` so npm installs it only there.
// `npm run release -- --all` writes the platform packages of the other
// targets the same way (scripts/release.ts). Publish the platform packages
// first, then the main one.
import { chmodSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { GREX_ENTRY, grexBuildCommand } from "./compile.ts";
import { hostName, type Target, TARGETS } from "./targets.ts";

const root = resolve(import.meta.dir, "..");

export const platformPackageName = (t: Target): string => `${pkg.name}-${t.npm}`;

function run(argv: string[], cwd: string): string {
  const r = Bun.spawnSync(argv, { cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, npm_config_update_notifier: "false" } });
  if (r.exitCode !== 0) throw new Error(`${argv.slice(0, 3).join(" ")} failed: ${r.stderr.toString().trim()}`);
  return r.stdout.toString();
}

/** `npm pack` of the staged directory into outDir; the tarball's path. */
function npmPack(dir: string, outDir: string): string {
  const npm = Bun.which("npm");
  if (!npm) throw new Error("npm is not on PATH; pack:npm needs it to write the tarballs.");
  mkdirSync(outDir, { recursive: true });
  const [info] = JSON.parse(run([npm, "pack", "--json", "--pack-destination", outDir], dir)) as { filename: string }[];
  if (!info) throw new Error(`npm pack wrote nothing for ${dir}`);
  return join(outDir, info.filename);
}

/** Stage a package in a temp directory, pack it, remove the stage. */
function staged(fill: (dir: string) => void, outDir: string): string {
  const dir = mkdtempSync(join(tmpdir(), "grex-pack-npm-"));
  try {
    fill(dir);
    return npmPack(dir, resolve(outDir));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const common = { version: pkg.version, license: pkg.license };

/** grex's sources and everything they import, bundled for Bun into libDir (split, so lazily imported modules stay lazy). */
function bundle(libDir: string, metafile: string): void {
  run([process.execPath, "build", "--target=bun", "--format=esm", "--splitting", "--minify", GREX_ENTRY, "--outdir", libDir, `--metafile=${metafile}`], root);
}

/**
 * THIRD-PARTY-NOTICES.md: name, version, licence and licence text of every
 * package a bundle took code from (the binary bundles the same modules), as
 * their licences ask of copies that carry their code.
 */
function thirdPartyNotices(metafile: string): string {
  const inputs = Object.keys((JSON.parse(readFileSync(metafile, "utf8")) as { inputs: Record<string, unknown> }).inputs);
  const dirs = new Set<string>();
  for (const input of inputs) {
    const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (m?.[1]) dirs.add(m[1]);
  }
  let text = "# Third-party notices\n\ngrex bundles code from these packages.\n";
  for (const dir of [...dirs].sort()) {
    const abs = join(root, dir);
    const meta = JSON.parse(readFileSync(join(abs, "package.json"), "utf8")) as { name: string; version: string; license?: string };
    text += `\n## ${meta.name} ${meta.version} (${meta.license ?? "licence not stated"})\n`;
    for (const f of readdirSync(abs).filter((f) => /^(licen[cs]e|copying|notice)/i.test(f)).sort()) {
      text += `\n\`\`\`\n${readFileSync(join(abs, f), "utf8").trim()}\n\`\`\`\n`;
    }
  }
  return text;
}

/** The notices for grex's bundled code, from a bundle made for the purpose. */
function noticesOfBundle(): string {
  const dir = mkdtempSync(join(tmpdir(), "grex-pack-notices-"));
  try {
    bundle(join(dir, "lib"), join(dir, "meta.json"));
    return thirdPartyNotices(join(dir, "meta.json"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The platform package for `target` holding `binary`; the tarball's path. */
export function packPlatform(target: Target, binary: string, outDir: string): string {
  return staged((dir) => {
    mkdirSync(join(dir, "bin"));
    const file = join(dir, "bin", `grex${target.exe}`);
    copyFileSync(binary, file);
    chmodSync(file, 0o755);
    const name = platformPackageName(target);
    writeFileSync(
      join(dir, "package.json"),
      `${JSON.stringify({ name, ...common, description: `The grex binary for ${target.npm}; install ${pkg.name}, which uses it.`, os: [target.os], cpu: [target.cpu], preferUnplugged: true }, null, 2)}\n`,
    );
    writeFileSync(join(dir, "THIRD-PARTY-NOTICES.md"), noticesOfBundle());
    writeFileSync(join(dir, "README.md"), `# ${name}\n\nThe compiled \`grex\` for ${target.npm}. Install \`${pkg.name}\` instead: it installs this package on this platform and runs its binary.\n`);
  }, outDir);
}

/** The main package: launcher, sources bundled for Bun, schema, docs; the tarball's path. */
export function packMain(outDir: string): string {
  return staged((dir) => {
    mkdirSync(join(dir, "bin"));
    for (const [from, to] of [["launcher.cjs", "grex.cjs"], ["launcher.cjs", "launcher.cjs"], ["install.cjs", "install.cjs"]] as const) {
      copyFileSync(join(root, "npm", from), join(dir, "bin", to));
      chmodSync(join(dir, "bin", to), 0o755);
    }
    // The Bun fallback: the sources and their dependencies as one bundle, so
    // the package needs nothing from the registry.
    const metafile = join(dir, "meta.json");
    bundle(join(dir, "lib"), metafile);
    writeFileSync(join(dir, "THIRD-PARTY-NOTICES.md"), thirdPartyNotices(metafile));
    rmSync(metafile);
    for (const p of ["schema", "docs", "README.md"]) cpSync(join(root, p), join(dir, p), { recursive: true });
    const optionalDependencies = Object.fromEntries(Object.values(TARGETS).map((t) => [platformPackageName(t), pkg.version]));
    const manifest = {
      name: pkg.name,
      ...common,
      description: pkg.description,
      type: "module",
      bin: { grex: "bin/grex.cjs" },
      // Where the platform package is installed, `grex` becomes its binary (npm/install.cjs).
      scripts: { postinstall: "node bin/install.cjs" },
      engines: { node: ">=18" },
      optionalDependencies,
    };
    writeFileSync(join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  }, outDir);
}

/** Build this machine's binary and write both tarballs into outDir; their paths. */
export function packHost(outDir: string): { main: string; platform: string } {
  const target = TARGETS[hostName];
  if (!target) throw new Error(`grex is not released for ${hostName}; pack:npm builds only for ${Object.keys(TARGETS).join(", ")}.`);
  const work = mkdtempSync(join(tmpdir(), "grex-pack-bin-"));
  try {
    const binary = join(work, `grex${target.exe}`);
    run(grexBuildCommand(binary), root);
    return { main: packMain(outDir), platform: packPlatform(target, binary, outDir) };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const at = process.argv.indexOf("--out");
  const outDir = resolve((at > 0 ? process.argv[at + 1] : undefined) ?? join(root, "dist", "npm"));
  try {
    const { main, platform } = packHost(outDir);
    for (const f of [main, platform]) process.stdout.write(`${f}  (${(statSync(f).size / 1e6).toFixed(1)} MB)\n`);
  } catch (e) {
    process.stderr.write(`pack:npm: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
}
