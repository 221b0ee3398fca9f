import { getSet } from "../cluster.ts";
import type { Command } from "../command.ts";
import { changeSet } from "../setstate.ts";
import { WAIT_FLAG, waitTimeout } from "../wait.ts";

export const resume: Command = {
  name: "resume",
  summary: "Resume a suspended set: wake every VM from its snapshot",
  description: `Sets spec.suspend=false. The operator wakes every hibernated VM (a released main is
recreated from its snapshot) and drops each snapshot once its VM runs again. With --wait the command
returns once the Ready condition is True for this change; WakeNoCapacity is reported while no node
has a seat for a released main.`,
  positionals: [{ name: "SET", complete: "cocoonsets" }],
  flags: [WAIT_FLAG],
  examples: ["resume demo --wait"],
  async run(ctx, args) {
    const [name = ""] = args.positionals;
    const timeout = waitTimeout(args);
    await getSet(ctx, name);
    await changeSet(ctx, name, { suspend: false }, { kind: "ready" }, timeout, "resumed");
  },
};
