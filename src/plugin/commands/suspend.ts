import type { CocoonSet } from "../../apis/v1/types.ts";
import { getSet } from "../cluster.ts";
import type { Command } from "../command.ts";
import { PluginError } from "../errors.ts";
import { booleanFlag } from "../flags.ts";
import { changeSet } from "../setstate.ts";
import { WAIT_FLAG, waitTimeout } from "../wait.ts";

export const suspend: Command = {
  name: "suspend",
  summary: "Suspend a set: hibernate every VM (--release also frees the main's seat)",
  description: `Sets spec.suspend=true. The operator hibernates every VM of the set and confirms each
snapshot in the registry. With --release it also sets hibernatePolicy=release: once the main's
snapshot is confirmed its pod is deleted, freeing the seat; resume restores it, on the same node
when there is room. Release needs a main-only set (agent.replicas 0, no toolboxes), the CRD's rule.
With --wait the command returns once the Suspended condition is True for this change.`,
  positionals: [{ name: "SET", complete: "cocoonsets" }],
  flags: [
    {
      name: "release",
      kind: "boolean",
      help: "free the main's seat while suspended (hibernatePolicy=release)",
    },
    WAIT_FLAG,
  ],
  examples: ["suspend demo --wait", "suspend solo --release --wait=10m"],
  async run(ctx, args) {
    const [name = ""] = args.positionals;
    const timeout = waitTimeout(args);
    const release = booleanFlag(args, "release");
    const cs = await getSet(ctx, name);
    if (release) refuseReleaseOfGroup(cs);
    const spec: Record<string, unknown> = { suspend: true };
    if (release) spec.hibernatePolicy = "release";
    await changeSet(ctx, name, spec, { kind: "suspended" }, timeout, "suspended");
  },
};

/** The CRD's rule, checked first so the message says what to change. */
function refuseReleaseOfGroup(cs: CocoonSet): void {
  const subAgents = cs.spec.agent.replicas ?? 0;
  const toolboxes = cs.spec.toolboxes?.length ?? 0;
  if (subAgents === 0 && toolboxes === 0) return;
  throw new PluginError(
    `--release needs a main-only set: hibernatePolicy=release requires agent.replicas=0 and no toolboxes, and cocoonset "${cs.metadata.name}" has ${subAgents} sub-agent(s) and ${toolboxes} toolbox(es); suspend without --release keeps every seat`,
  );
}
