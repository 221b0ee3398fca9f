import type { CocoonSet } from "../../apis/v1/types.ts";
import { type Command, command } from "../command.ts";
import { DRY_RUN_FLAG } from "../dryrun.ts";
import { PluginError } from "../errors.ts";
import { booleanFlag } from "../flags.ts";
import { SELECTOR_FLAG, targetSets } from "../selection.ts";
import { ANN_RELEASE_UNTIL_RESUME, changeSet, type SetPatch } from "../setstate.ts";
import { WAIT_FLAGS, waitTimeout } from "../wait.ts";

export const suspend: Command = command({
  name: "suspend",
  summary:
    "Suspend a set (or every set -l selects): hibernate every VM (--release also frees the main's seat)",
  description: `Sets spec.suspend=true. The operator hibernates every VM of the set and confirms each
snapshot in the registry. With --release it also sets hibernatePolicy=release for this suspend: once
the main's snapshot is confirmed its pod is deleted, freeing the seat; resume restores it, on the
same node when there is room, and puts the set's previous hibernatePolicy back (the annotation
${ANN_RELEASE_UNTIL_RESUME} holds it meanwhile). --keep-release leaves hibernatePolicy=release set
for every later suspend. Release needs a main-only set (agent.replicas 0, no toolboxes), the CRD's
rule. -l SELECTOR suspends every set of the namespace it matches, one after another. With --wait
the command returns once the Suspended condition is True for this change.`,
  positionals: [{ name: "SET", complete: "cocoonsets", optional: true }],
  flags: [
    {
      name: "release",
      kind: "boolean",
      help: "free the main's seat while suspended (hibernatePolicy=release until the next resume)",
    },
    {
      name: "keep-release",
      kind: "boolean",
      help: "with --release: keep hibernatePolicy=release after the resume, for every later suspend",
    },
    SELECTOR_FLAG,
    ...WAIT_FLAGS,
    DRY_RUN_FLAG,
  ],
  examples: ["suspend demo --wait", "suspend solo --release --wait --timeout 10m", "suspend -l team=eval"],
  async run(ctx, args) {
    const timeout = waitTimeout(args);
    const release = booleanFlag(args, "release");
    const keep = booleanFlag(args, "keep-release");
    if (keep && !release) throw new PluginError("--keep-release goes with --release");
    const sets = await targetSets(ctx, args);
    // Every set checked before any is written: -l either suspends them all or none.
    if (release) for (const cs of sets) refuseReleaseOfGroup(cs);
    for (const cs of sets) {
      await changeSet(
        ctx,
        cs.metadata.name ?? "",
        suspendPatch(cs, release, keep),
        { kind: "suspended" },
        timeout,
        "suspended",
      );
    }
  },
});

/** spec.suspend, and for --release the policy with what resume puts back (unless it is kept). */
function suspendPatch(cs: CocoonSet, release: boolean, keep: boolean): SetPatch {
  const previous = cs.spec.hibernatePolicy ?? "";
  if (!release || previous === "release") return { spec: { suspend: true } };
  return {
    spec: { suspend: true, hibernatePolicy: "release" },
    annotations: { [ANN_RELEASE_UNTIL_RESUME]: keep ? null : previous },
  };
}

/** The CRD's rule, checked first so the message says what to change. */
function refuseReleaseOfGroup(cs: CocoonSet): void {
  const subAgents = cs.spec.agent.replicas ?? 0;
  const toolboxes = cs.spec.toolboxes?.length ?? 0;
  if (subAgents === 0 && toolboxes === 0) return;
  throw new PluginError(
    `--release needs a main-only set: hibernatePolicy=release requires agent.replicas=0 and no toolboxes, and cocoonset "${cs.metadata.name}" has ${subAgents} sub-agent(s) and ${toolboxes} toolbox(es); suspend without --release keeps every seat`,
  );
}
