import { COCOONCHECKPOINTS, COCOONSETS } from "../../controller/resources.ts";
import { takeCheckpoint } from "../../sdk/checkpoints.ts";
import { type Command, command } from "../command.ts";
import { DRY_RUN_FLAG } from "../dryrun.ts";
import { announce, formatStructured } from "../output.ts";
import { DEFAULT_WAIT_MS, pluginSession, pluginWait, WAIT_FLAGS, waitTimeout } from "../wait.ts";

export const checkpoint: Command = command({
  name: "checkpoint",
  summary: "Checkpoint a set under a name (suspends it for the copy, then restores its suspend state)",
  description: `Creates the CocoonCheckpoint NAME of the set. The operator copies each VM's :hibernate
snapshot to the tag ckpt-NAME once the set is Suspended at its current generation. A running set is
suspended first (spec.suspend=true), the command waits until the checkpoint is Ready, and then resumes
the set (spec.suspend=false); a set that was already suspended stays suspended. Because the resume
must follow the copy, the command waits whenever it suspended the set, with or without --wait (the
default timeout then). Without --wait, a set that was already suspended is left to the operator: the
command returns once the checkpoint is created. With --wait each stage (the suspend, the copy, the
resume) gets DURATION, and the command returns once the resumed set is Ready. If the suspend or the
copy fails or times out, the set is resumed all the same and the checkpoint is left as it is.`,
  positionals: [{ name: "SET", complete: "cocoonsets" }, { name: "NAME" }],
  flags: [...WAIT_FLAGS, DRY_RUN_FLAG],
  examples: ["checkpoint demo before-eval --wait", "checkpoint demo nightly -o yaml"],
  async run(ctx, args) {
    const [setName = "", name = ""] = args.positionals;
    const explicitWait = waitTimeout(args);
    const timeout = explicitWait ?? DEFAULT_WAIT_MS;
    const ck = await takeCheckpoint(pluginSession(ctx, timeout), setName, name, {
      wait: pluginWait(ctx, timeout),
      awaitSuspended: explicitWait !== undefined,
      ...(explicitWait !== undefined ? { resumeWait: pluginWait(ctx, explicitWait) } : {}),
      dryRun: ctx.dryRun !== "none",
      onWritten: (what) => {
        if (what === "created") announce(ctx, COCOONCHECKPOINTS, name, "created");
        else if (ctx.dryRun !== "none")
          announce(ctx, COCOONSETS, setName, "suspended, and resumed once the checkpoint is Ready");
        else announce(ctx, COCOONSETS, setName, what);
      },
      onLeft: (phase) =>
        ctx.info(
          `cocooncheckpoint "${name}" is left in phase ${phase}: it completes the next time cocoonset "${setName}" is Suspended; delete it if not wanted (kubectl delete cocooncheckpoint ${name})`,
        ),
    });
    if (ctx.dryRun !== "none") return;
    if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(ck, ctx.output));
  },
});
