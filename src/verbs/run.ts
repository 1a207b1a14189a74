// `grex run <action>`: run the declared actions of one kind (e.g. `symlink`) in every matched pack.
import * as v from "valibot";
import { desc } from "./describe.ts";
import { stepLines } from "./render-steps.ts";
import { closest } from "../core/base/closest.ts";
import { packOpError, pluginError } from "../core/base/errors.ts";
import { actionChoices, BUILTIN_ACTIONS, isKnownAction } from "../core/base/registry.ts";
import { loadWorkspaceView } from "../core/workspace/packs.ts";
import { workspaceConfinement } from "../core/fs/confine.ts";
import { dryRunParam, filterParam } from "./common.ts";
import { StepSchema } from "./sync-shared.ts";
import { ALLOW_OUTSIDE_HOME, allowOutsideHomeEntry, allowOutsideHomeFlag, allowsOutsideHome } from "./confine-param.ts";
import { defineVerb, unlessDryRun } from "./types.ts";
import { existsSync } from "node:fs";

export const runVerb = defineVerb({
  name: "run",
  description:
    "Run the declared actions of one kind (symlink, env, mkdir, rmdir, require, when, exec — including those nested in `when`) in every matched pack, through the same executor as install; returns one step per action.",
  params: v.strictObject({
    action: desc(
      v.pipe(v.string(), v.minLength(1, "is required")),
      "The action kind to run in every matched pack, as declared in pack.yaml (those nested in `when` included). Required.",
      BUILTIN_ACTIONS,
    ),
    filter: filterParam,
    dry_run: dryRunParam,
    ...allowOutsideHomeEntry,
  }),
  result: v.object({ steps: v.array(v.intersect([StepSchema, v.object({ message: v.string() })])) }),
  readOnly: false,
  effects: unlessDryRun({ workspace: "shared", packs: "each", writes: true }),
  destructive: true,
  mcp: true,
  cliOnly: [ALLOW_OUTSIDE_HOME],
  examples: ["grex run symlink", "grex run exec --filter dotfiles"],
  cli: { args: "<action>", positionals: ["action"], flags: [allowOutsideHomeFlag] },
  async run(ctx, p, signal, progress) {
    if (!isKnownAction(p.action)) {
      // Exit 8, as for an unknown action in pack.yaml.
      const hint = closest(p.action, actionChoices().split(", "));
      throw pluginError(`Unknown action '${p.action}'.${hint ? ` Did you mean '${hint}'?` : ""} Use one of ${actionChoices()}.`, { field: "action" });
    }
    const ws = ctx.workspace();
    const view = await loadWorkspaceView(ws, ctx.warn);
    const { selectPacks } = await import("./select.ts");
    const packs = (await selectPacks(ctx, view, view.packs, p.filter)).packs.filter((n) => existsSync(n.dir));
    const confine = workspaceConfinement(ws.root, view.packs.map((n) => n.id), ctx.env, allowsOutsideHome(ctx, p));
    const { loadPackYaml } = await import("../core/pack/load.ts");
    const { runNamedActions } = await import("../core/packtypes/run-actions.ts");
    const steps: Array<v.InferOutput<typeof StepSchema> & { message: string }> = [];
    let done = 0;
    for (const pack of packs) {
      const manifest = await loadPackYaml(pack.dir);
      if (manifest) {
        const r = await runNamedActions(
          { ws, id: pack.id, dir: pack.dir, manifest, dryRun: p.dry_run, env: ctx.env, signal, confine },
          p.action,
        );
        for (const s of r.steps) {
          const reason = r.failed && r.failed.idx === s.idx ? r.failed.reason : "";
          steps.push({ ...s, message: reason || (typeof s.details.message === "string" ? s.details.message : "") });
        }
      }
      progress(++done, packs.length, pack.id);
    }
    return { steps };
  },
  failure(r) {
    const bad = r.steps.filter((s) => s.result === "failed");
    if (bad.length === 0) return undefined;
    return packOpError(`${bad.length} action(s) failed (first: ${bad[0]?.pack} ${bad[0]?.action}[${bad[0]?.idx}]: ${bad[0]?.message}).`);
  },
  render(r, _p, style) {
    if (r.steps.length === 0) return "No matching actions declared.";
    const changed = stepLines(r.steps, style);
    const count = (...results: string[]) => r.steps.filter((s) => results.includes(s.result)).length;
    // Each count says what it is: a dry run changed nothing, it would change.
    const parts = [
      `${count("performed_change")} changed`,
      ...(count("would_perform_change") > 0 ? [`${count("would_perform_change")} would change`] : []),
      `${count("failed")} failed`,
      `${r.steps.length - count("performed_change", "would_perform_change", "failed")} already in place`,
    ];
    return [...changed, `${r.steps.length} action${r.steps.length === 1 ? "" : "s"}: ${parts.join(", ")}`].join("\n");
  },
});
