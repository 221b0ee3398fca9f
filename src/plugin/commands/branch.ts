import { API_VERSION, type CocoonSet, type CocoonSetSpec, KIND_COCOONSET } from "../../apis/v1/types.ts";
import { ANN_FROM_CHECKPOINT } from "../../checkpoint/keys.ts";
import { isAlreadyExists } from "../../controller/errors.ts";
import { COCOONSETS } from "../../controller/resources.ts";
import { describeMembers, getCheckpoint, heldMembers } from "../checkpoints.ts";
import { findSet } from "../cluster.ts";
import type { Command, CommandContext } from "../command.ts";
import { DRY_RUN_FLAG } from "../dryrun.ts";
import { PluginError, UsageError } from "../errors.ts";
import { type ParsedArgs, stringFlag } from "../flags.ts";
import { announce, formatStructured } from "../output.ts";
import { setWait } from "../setstate.ts";
import { WAIT_FLAGS, WarningWatch, waitTimeout, waitUntil } from "../wait.ts";

export const branch: Command = {
  name: "branch",
  summary: "Start a new set from a Ready checkpoint (its VMs restore the checkpointed state)",
  description: `Creates the CocoonSet NEWSET with the spec of the checkpoint's source set and the
annotation ${ANN_FROM_CHECKPOINT}=CHECKPOINT. The operator copies
each checkpointed snapshot into the new VMs' repositories before the first pod, and each VM restores
from it; slots the checkpoint lacks boot as usual. The source's spec.suspend and spec.nodeName are
not copied: the new set runs, and the scheduler places it. --replicas sets spec.agent.replicas
(sub-agents). The source set must still exist: a checkpoint records its members, not the set's
spec. With --wait the command returns once the new set is Ready at its generation.`,
  positionals: [{ name: "CHECKPOINT", complete: "cocooncheckpoints" }, { name: "NEWSET" }],
  flags: [
    {
      name: "replicas",
      kind: "string",
      value: "N",
      help: "sub-agents of the new set, spec.agent.replicas (default: the source set's)",
    },
    ...WAIT_FLAGS,
    DRY_RUN_FLAG,
  ],
  examples: ["branch before-eval run-1 --wait", "branch before-eval run-2 --replicas 4"],
  async run(ctx, args) {
    const [checkpointName = "", newName = ""] = args.positionals;
    const replicas = replicasFlag(args);
    const timeout = waitTimeout(args);
    const ck = await getCheckpoint(ctx, checkpointName);
    if (ck.metadata.deletionTimestamp)
      throw new PluginError(`cocooncheckpoint "${checkpointName}" is being deleted`);
    const phase = ck.status?.phase;
    if (phase !== "Ready") {
      const why = ck.status?.message ? `: ${ck.status.message}` : "";
      throw new PluginError(
        `cocooncheckpoint "${checkpointName}" is not Ready (phase ${phase ?? "(none)"}${why}); a set branched now would create no pod until it is. Wait for it: kubectl wait --for=jsonpath='{.status.phase}'=Ready cocooncheckpoint/${checkpointName}`,
      );
    }
    if (await findSet(ctx, newName)) throw alreadyExists(ctx, newName);
    const sourceName = ck.spec.cocoonSetRef.name;
    const source = await findSet(ctx, sourceName);
    if (!source) {
      throw new PluginError(
        `cocoonset "${sourceName}", which cocooncheckpoint "${checkpointName}" was taken from, no longer exists, and a checkpoint records its members, not the set's spec: create the CocoonSet yourself with the annotation ${ANN_FROM_CHECKPOINT}: ${checkpointName}. The checkpoint holds ${describeMembers(heldMembers(ck))}; a slot or toolbox of the new spec restores from the member of the same slot or toolbox name`,
      );
    }
    const warnings =
      timeout === undefined ? undefined : await WarningWatch.start(ctx, KIND_COCOONSET, newName);
    let cs = await createBranch(ctx, newName, checkpointName, branchSpec(source.spec, replicas));
    announce(ctx, COCOONSETS, newName, `created (from checkpoint ${checkpointName})`);
    if (warnings && timeout !== undefined) {
      const generation = cs.metadata.generation ?? 0;
      cs = (await waitUntil(ctx, setWait(ctx, newName, generation, { kind: "ready" }, warnings), timeout)).cs;
    }
    if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(cs, ctx.output));
  },
};

function replicasFlag(args: ParsedArgs): number | undefined {
  const value = stringFlag(args, "replicas");
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) {
    throw new UsageError(`invalid argument "${value}" for "--replicas": want a whole number, 0 or more`);
  }
  return Number(value);
}

/** The source's spec without its own run state and placement, with --replicas applied. */
export function branchSpec(source: CocoonSetSpec, replicas: number | undefined): CocoonSetSpec {
  const { suspend: _suspend, nodeName: _nodeName, ...spec } = source;
  return replicas === undefined ? spec : { ...spec, agent: { ...spec.agent, replicas } };
}

function alreadyExists(ctx: CommandContext, name: string): PluginError {
  return new PluginError(
    `cocoonset "${name}" already exists in namespace "${ctx.namespace}": a branch is a new set; choose another name`,
  );
}

async function createBranch(
  ctx: CommandContext,
  name: string,
  checkpointName: string,
  spec: CocoonSetSpec,
): Promise<CocoonSet> {
  try {
    return await ctx.client.create<CocoonSet>(COCOONSETS, ctx.namespace, {
      apiVersion: API_VERSION,
      kind: KIND_COCOONSET,
      metadata: { name, namespace: ctx.namespace, annotations: { [ANN_FROM_CHECKPOINT]: checkpointName } },
      spec,
    });
  } catch (err) {
    if (isAlreadyExists(err)) throw alreadyExists(ctx, name);
    throw err;
  }
}
