import { type Command, command } from "../command.ts";
import { DRY_RUN_FLAG } from "../dryrun.ts";
import { changeHibernation } from "../hibernation.ts";
import { WAIT_FLAGS, waitTimeout } from "../wait.ts";

export const hibernate: Command = command({
  name: "hibernate",
  summary: "Hibernate one pod's VM (creates or flips its CocoonHibernation)",
  description: `Creates a CocoonHibernation for the pod (named after it) with desire Hibernate, or flips
the existing one. The operator asks vk-cocoon to snapshot the VM and confirms the snapshot in the
registry; the pod stays, without a running VM. With --wait the command returns once the
CocoonHibernation is Hibernated for this change; HibernateTimedOut is reported after 3 minutes.`,
  positionals: [{ name: "POD", complete: "cocoon-pods" }],
  flags: [...WAIT_FLAGS, DRY_RUN_FLAG],
  examples: ["hibernate demo-1 --wait"],
  async run(ctx, args) {
    const [pod = ""] = args.positionals;
    await changeHibernation(ctx, pod, "Hibernate", waitTimeout(args));
  },
});
