import { ANN_FROM_CHECKPOINT } from "../../checkpoint/keys.ts";
import { COCOONSETS } from "../../controller/resources.ts";
import { branchFrom } from "../../sdk/branch.ts";
import { type Command, command } from "../command.ts";
import { DRY_RUN_FLAG } from "../dryrun.ts";
import { UsageError } from "../errors.ts";
import { type ParsedArgs, stringFlag } from "../flags.ts";
import { announce, formatStructured } from "../output.ts";
import { pluginSession, pluginWait, WAIT_FLAGS, waitTimeout } from "../wait.ts";

export const branch: Command = command({
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
    const cs = await branchFrom(pluginSession(ctx, timeout), checkpointName, newName, {
      ...(replicas !== undefined ? { replicas } : {}),
      ...(timeout !== undefined ? { wait: pluginWait(ctx, timeout) } : {}),
      onCreated: () => announce(ctx, COCOONSETS, newName, `created (from checkpoint ${checkpointName})`),
    });
    if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(cs, ctx.output));
  },
});

function replicasFlag(args: ParsedArgs): number | undefined {
  const value = stringFlag(args, "replicas");
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) {
    throw new UsageError(`invalid argument "${value}" for "--replicas": want a whole number, 0 or more`);
  }
  return Number(value);
}
