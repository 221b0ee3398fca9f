import { randomBytes } from "node:crypto";
import { API_VERSION_V1ALPHA1, type CocoonRestore, KIND_COCOONRESTORE } from "../../apis/v1alpha1/types.ts";
import { isAlreadyExists, isNotFound, unlessNotFound } from "../../controller/errors.ts";
import { COCOONRESTORES } from "../../controller/resources.ts";
import { getCheckpoint } from "../checkpoints.ts";
import { getSet } from "../cluster.ts";
import type { Command, CommandContext } from "../command.ts";
import { DRY_RUN_FLAG } from "../dryrun.ts";
import { PluginError } from "../errors.ts";
import { stringFlag } from "../flags.ts";
import { announce, formatStructured } from "../output.ts";
import { judgeRestore, restoresNotServed } from "../restores.ts";
import { WAIT_FLAGS, WarningWatch, waitTimeout, waitUntil } from "../wait.ts";

export const restore: Command = {
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
    await getSet(ctx, setName);
    const ck = await getCheckpoint(ctx, checkpointName);
    if (ck.metadata.deletionTimestamp) {
      throw new PluginError(`cocooncheckpoint "${checkpointName}" is being deleted`);
    }
    if (ck.status?.phase !== "Ready") {
      const why = ck.status?.message ? `: ${ck.status.message}` : "";
      throw new PluginError(
        `cocooncheckpoint "${checkpointName}" is not Ready (phase ${ck.status?.phase ?? "(none)"}${why}); a restore to it would be refused`,
      );
    }
    const name = stringFlag(args, "name") ?? defaultName(setName, checkpointName);
    const warnings =
      timeout === undefined ? undefined : await WarningWatch.start(ctx, KIND_COCOONRESTORE, name);
    let r = await createRestore(ctx, name, setName, checkpointName);
    announce(ctx, COCOONRESTORES, name, `created (cocoonset ${setName} to checkpoint ${checkpointName})`);
    if (warnings && timeout !== undefined) {
      r =
        (await waitUntil(
          ctx,
          {
            what: `cocoonrestore "${name}" to be Restored`,
            watched: { rt: COCOONRESTORES, name },
            read: () =>
              unlessNotFound(() => ctx.client.get<CocoonRestore>(COCOONRESTORES, ctx.namespace, name)),
            judge: (current) => judgeRestore(current, name),
            warnings,
          },
          timeout,
        )) ?? r;
    }
    if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(r, ctx.output));
  },
};

/** `<set>-<checkpoint>-<5 characters>`, cut to leave room for the suffix under 253. */
function defaultName(setName: string, checkpointName: string): string {
  const suffix = randomBytes(4).toString("hex").slice(0, 5);
  return `${`${setName}-${checkpointName}`.slice(0, 246)}-${suffix}`;
}

async function createRestore(
  ctx: CommandContext,
  name: string,
  setName: string,
  checkpointName: string,
): Promise<CocoonRestore> {
  try {
    return await ctx.client.create<CocoonRestore>(COCOONRESTORES, ctx.namespace, {
      apiVersion: API_VERSION_V1ALPHA1,
      kind: KIND_COCOONRESTORE,
      metadata: { name, namespace: ctx.namespace },
      spec: { cocoonSetRef: { name: setName }, checkpointRef: { name: checkpointName } },
    });
  } catch (err) {
    if (isAlreadyExists(err)) {
      throw new PluginError(
        `cocoonrestore "${name}" already exists in namespace "${ctx.namespace}": a restore is one-shot; choose another --name`,
      );
    }
    if (isNotFound(err)) throw restoresNotServed();
    throw err;
  }
}
