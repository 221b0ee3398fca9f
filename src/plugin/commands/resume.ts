import type { CocoonSet } from "../../apis/v1/types.ts";
import { ANN_EXPIRE_ACTION, ANN_EXPIRE_AT, readIdlePolicy } from "../../idle/policy.ts";
import { formatRFC3339Nano } from "../../rfc3339.ts";
import { getSet } from "../cluster.ts";
import type { Command } from "../command.ts";
import { PluginError } from "../errors.ts";
import { changeSet } from "../setstate.ts";
import { WAIT_FLAG, waitTimeout } from "../wait.ts";

export const resume: Command = {
  name: "resume",
  summary: "Resume a suspended set: wake every VM from its snapshot",
  description: `Sets spec.suspend=false. The operator wakes every hibernated VM (a released main is
recreated from its snapshot) and drops each snapshot once its VM runs again. With --wait the command
returns once the Ready condition is True for this change; WakeNoCapacity is reported while no node
has a seat for a released main. A set whose ${ANN_EXPIRE_AT} has passed (with ${ANN_EXPIRE_ACTION}
Suspend) is refused: the operator would suspend it again at once.`,
  positionals: [{ name: "SET", complete: "cocoonsets" }],
  flags: [WAIT_FLAG],
  examples: ["resume demo --wait"],
  async run(ctx, args) {
    const [name = ""] = args.positionals;
    const timeout = waitTimeout(args);
    refuseExpired(await getSet(ctx, name), ctx.now());
    await changeSet(ctx, name, { suspend: false }, { kind: "ready" }, timeout, "resumed");
  },
};

/** An expired Suspend policy re-parks the set in the operator's next pass (docs/idle.md, Expiry). */
function refuseExpired(cs: CocoonSet, nowMs: number): void {
  const { expiry } = readIdlePolicy(cs.metadata.annotations);
  if (expiry?.action !== "Suspend" || expiry.atMs > nowMs) return;
  const name = cs.metadata.name;
  throw new PluginError(
    `cocoonset "${name}" expired at ${formatRFC3339Nano(expiry.atMs)} (${ANN_EXPIRE_AT}, ${ANN_EXPIRE_ACTION} Suspend): the operator would suspend it again at once; move or remove ${ANN_EXPIRE_AT} first, e.g. kubectl annotate cocoonset ${name} ${ANN_EXPIRE_AT}-`,
  );
}
