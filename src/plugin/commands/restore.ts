import { COCOONRESTORES } from "../../controller/resources.ts";
import { restoreTo } from "../../sdk/restores.ts";
import { type Command, command } from "../command.ts";
import { DRY_RUN_FLAG } from "../dryrun.ts";
import { stringFlag } from "../flags.ts";
import { announce, formatStructured } from "../output.ts";
import { pluginSession, pluginWait, WAIT_FLAGS, waitTimeout } from "../wait.ts";

export const restore: Command = command({
  name: "restore",
  summary: "Roll a set back to a checkpoint in place (its current state is discarded)",
  description: `Creates a CocoonRestore of SET to CHECKPOINT, a Ready checkpoint of SET or of the set SET
was branched from. The operator suspends SET if it runs (the snapshots that suspend takes are the
state the restore discards), puts each checkpointed snapshot in place as its VM's :hibernate, and
resumes the set; each VM wakes from the checkpoint. A set that was suspended stays suspended, and its
VMs restore from the checkpoint when it resumes. Slots the checkpoint has no member for keep their
own state. The operator refuses, and changes nothing, while another restore of the set runs, when the
set is being deleted, or when a member cannot restore under the set's spec (another image, backend,
OS or compatibility class). --name names the CocoonRestore (default SET-CHECKPOINT-xxxxx). With
--wait the command returns once it is Restored, or exits 3 with the operator's reason.`,
  positionals: [
    { name: "SET", complete: "cocoonsets" },
    { name: "CHECKPOINT", complete: "cocooncheckpoints" },
  ],
  flags: [
    {
      name: "name",
      kind: "string",
      value: "NAME",
      help: "the CocoonRestore's name (default SET-CHECKPOINT-xxxxx)",
    },
    ...WAIT_FLAGS,
    DRY_RUN_FLAG,
  ],
  examples: ["restore demo before-eval --wait", "restore run-1 before-eval --name undo-1 -o yaml"],
  async run(ctx, args) {
    const [setName = "", checkpointName = ""] = args.positionals;
    const timeout = waitTimeout(args);
    const name = stringFlag(args, "name");
    const r = await restoreTo(pluginSession(ctx, timeout), setName, checkpointName, {
      ...(name !== undefined ? { name } : {}),
      ...(timeout !== undefined ? { wait: pluginWait(ctx, timeout) } : {}),
      onCreated: (created) =>
        announce(
          ctx,
          COCOONRESTORES,
          created.metadata.name ?? "",
          `created (cocoonset ${setName} to checkpoint ${checkpointName})`,
        ),
    });
    if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(r, ctx.output));
  },
});
