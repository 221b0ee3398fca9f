// CocoonCheckpoints as the plugin reads and judges them (docs/checkpoints.md): one by name with a
// message when it is missing or its kind is not served, a set's checkpoints, and the --wait goal of
// `checkpoint`, Ready, judged together with the source set so a set that fails to suspend ends the wait.

import type { CocoonSet } from "../apis/v1/types.ts";
import type { CheckpointMember, CocoonCheckpoint } from "../apis/v1alpha1/types.ts";
import { isNotFound, unlessNotFound } from "../controller/errors.ts";
import { COCOONCHECKPOINTS } from "../controller/resources.ts";
import type { CommandContext } from "./command.ts";
import { PluginError } from "./errors.ts";
import { humanSize } from "./output.ts";
import type { Verdict } from "./wait.ts";

type Reader = Pick<CommandContext, "client" | "namespace">;

/** The CRD is missing (404 on the collection): say what to apply instead of "not found". */
export function checkpointsNotServed(): PluginError {
  return new PluginError(
    "the cluster does not serve CocoonCheckpoint (cocoonset.cocoonstack.io/v1alpha1): apply config/crd (bases/cocoonset.cocoonstack.io_cocooncheckpoints.yaml) first",
  );
}

/** The checkpoint, or undefined when there is none of that name. */
export function findCheckpoint(ctx: Reader, name: string): Promise<CocoonCheckpoint | undefined> {
  return unlessNotFound(() => ctx.client.get<CocoonCheckpoint>(COCOONCHECKPOINTS, ctx.namespace, name));
}

export async function getCheckpoint(ctx: Reader, name: string): Promise<CocoonCheckpoint> {
  const ck = await findCheckpoint(ctx, name);
  if (ck) return ck;
  throw new PluginError(`cocooncheckpoint "${name}" not found in namespace "${ctx.namespace}"`);
}

/** The namespace's checkpoints of `set`, oldest first (by creation time, then name). */
export async function checkpointsOf(ctx: Reader, set: string): Promise<CocoonCheckpoint[]> {
  let items: CocoonCheckpoint[];
  try {
    ({ items } = await ctx.client.list<CocoonCheckpoint>(COCOONCHECKPOINTS, ctx.namespace));
  } catch (err) {
    if (isNotFound(err)) throw checkpointsNotServed();
    throw err;
  }
  return items
    .filter((ck) => ck.spec?.cocoonSetRef?.name === set)
    .sort(
      (a, b) =>
        (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "") ||
        (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
    );
}

/** The members that hold a snapshot (a member without a digest only tells a delete to probe). */
export function heldMembers(ck: CocoonCheckpoint): CheckpointMember[] {
  return (ck.status?.members ?? []).filter((m) => m.digest);
}

/** "main (ubuntu), sub-agent 1 (ubuntu), toolbox tools (ubuntu)". */
export function describeMembers(members: readonly CheckpointMember[]): string {
  return members
    .map((m) => {
      const place =
        m.role === "toolbox" ? `toolbox ${m.toolbox}` : m.role === "main" ? "main" : `sub-agent ${m.slot}`;
      return m.image ? `${place} (image ${m.image})` : place;
    })
    .join(", ");
}

export interface CheckpointState {
  /** Undefined once the checkpoint is gone. */
  ck: CocoonCheckpoint | undefined;
  set: CocoonSet | undefined;
}

export function judgeCheckpoint(state: CheckpointState, name: string): Verdict {
  const { ck, set } = state;
  if (!ck || ck.metadata.deletionTimestamp) {
    return { kind: "failed", reason: "Deleted", message: `cocooncheckpoint "${name}" was deleted` };
  }
  const phase = ck.status?.phase;
  if (phase === "Ready") {
    const held = heldMembers(ck);
    return {
      kind: "done",
      summary: `cocooncheckpoint "${name}" is Ready: ${held.length} snapshots, ${humanSize(ck.status?.totalBytes ?? 0)}`,
    };
  }
  if (phase === "Failed") {
    return {
      kind: "failed",
      reason: "Failed",
      message: `cocooncheckpoint "${name}" is Failed: ${ck.status?.message ?? "phase Failed"}`,
    };
  }
  if (set?.status?.phase === "Failed" && set.status.observedGeneration === set.metadata.generation) {
    const ready = set.status.conditions?.find((c) => c.type === "Ready");
    return {
      kind: "failed",
      reason: "Failed",
      message: `cocoonset "${set.metadata.name}" is Failed: ${ready?.message ?? "phase Failed"}`,
    };
  }
  const message = ck.status?.message ? `: ${ck.status.message}` : "";
  return { kind: "waiting", progress: `phase ${phase ?? "(none)"}${message}` };
}
