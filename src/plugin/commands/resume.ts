import type { CocoonSet } from "../../apis/v1/types.ts";
import { ANN_EXPIRE_ACTION, ANN_EXPIRE_AT, readIdlePolicy } from "../../idle/policy.ts";
import { formatRFC3339Nano } from "../../rfc3339.ts";
import { type Command, command } from "../command.ts";
import { DRY_RUN_FLAG } from "../dryrun.ts";
import { PluginError } from "../errors.ts";
import { SELECTOR_FLAG, targetSets } from "../selection.ts";
import { ANN_RELEASE_UNTIL_RESUME, changeSet, type SetPatch } from "../setstate.ts";
import { WAIT_FLAGS, waitTimeout } from "../wait.ts";

export const resume: Command = command({
  name: "resume",
  summary: "Resume a suspended set (or every set -l selects): wake every VM from its snapshot",
  description: `Sets spec.suspend=false. The operator wakes every hibernated VM (a released main is
recreated from its snapshot) and drops each snapshot once its VM runs again. A hibernatePolicy=release
that \`suspend --release\` set for one suspend is put back to what it was. With --wait the command
returns once the Ready condition is True for this change; WakeNoCapacity is reported while no node
has a seat for a released main. A set whose ${ANN_EXPIRE_AT} has passed (with ${ANN_EXPIRE_ACTION}
Suspend) is refused: the operator would suspend it again at once. -l SELECTOR resumes every set of
the namespace it matches, one after another.`,
  positionals: [{ name: "SET", complete: "cocoonsets", optional: true }],
  flags: [SELECTOR_FLAG, ...WAIT_FLAGS, DRY_RUN_FLAG],
  examples: ["resume demo --wait", "resume -l team=eval --wait"],
  async run(ctx, args) {
    const timeout = waitTimeout(args);
    const sets = await targetSets(ctx, args);
    for (const cs of sets) refuseExpired(cs, ctx.now());
    for (const cs of sets) {
      await changeSet(ctx, cs.metadata.name ?? "", resumePatch(cs), { kind: "ready" }, timeout, "resumed");
    }
  },
});

/** spec.suspend=false, and the hibernatePolicy from before a one-suspend release. */
function resumePatch(cs: CocoonSet): SetPatch {
  const previous = cs.metadata.annotations?.[ANN_RELEASE_UNTIL_RESUME];
  if (previous === undefined) return { spec: { suspend: false } };
  return {
    spec: { suspend: false, hibernatePolicy: previous === "" ? null : previous },
    annotations: { [ANN_RELEASE_UNTIL_RESUME]: null },
  };
}

/** An expired Suspend policy re-parks the set in the operator's next pass (docs/idle.md, Expiry). */
function refuseExpired(cs: CocoonSet, nowMs: number): void {
  const { expiry } = readIdlePolicy(cs.metadata.annotations);
  if (expiry?.action !== "Suspend" || expiry.atMs > nowMs) return;
  const name = cs.metadata.name;
  throw new PluginError(
    `cocoonset "${name}" expired at ${formatRFC3339Nano(expiry.atMs)} (${ANN_EXPIRE_AT}, ${ANN_EXPIRE_ACTION} Suspend): the operator would suspend it again at once; move or remove ${ANN_EXPIRE_AT} first, e.g. kubectl annotate cocoonset ${name} ${ANN_EXPIRE_AT}-`,
  );
}
