import { type Command, command } from "../command.ts";
import { DRY_RUN_FLAG } from "../dryrun.ts";
import { changeHibernation } from "../hibernation.ts";
import { WAIT_FLAGS, waitTimeout } from "../wait.ts";

export const wake: Command = command({
  name: "wake",
  summary: "Wake one pod's hibernated VM (flips its CocoonHibernation to Wake)",
  description: `Sets the pod's CocoonHibernation to desire Wake (creating it if there is none). The
operator clears the hibernate request, vk-cocoon restores the VM from its snapshot, and the snapshot
is dropped once the VM runs. With --wait the command returns once the CocoonHibernation is Active for
this change; WakeTimedOut is reported after 5 minutes.`,
  positionals: [{ name: "POD", complete: "cocoon-pods" }],
  flags: [...WAIT_FLAGS, DRY_RUN_FLAG],
  examples: ["wake demo-1 --wait"],
  async run(ctx, args) {
    const [pod = ""] = args.positionals;
    await changeHibernation(ctx, pod, "Wake", waitTimeout(args));
  },
});
