// Branching: a new set started from a Ready checkpoint (annotation from-checkpoint), with the spec of
// the checkpoint's source set; the operator copies each checkpointed snapshot into the new VMs
// before their first pod, and each VM restores from it.

import { API_VERSION, type CocoonSet, type CocoonSetSpec, KIND_COCOONSET } from "../apis/v1/types.ts";
import { ANN_FROM_CHECKPOINT } from "../checkpoint/keys.ts";
import { isAlreadyExists, unlessNotFound } from "../controller/errors.ts";
import { COCOONSETS } from "../controller/resources.ts";
import { describeMembers, getCheckpoint, heldMembers } from "./checkpoints.ts";
import { CocoonError } from "./errors.ts";
import { WarningWatch } from "./events.ts";
import { setWait } from "./setstate.ts";
import { type Session, type WaitOptions, waitFor } from "./wait.ts";

/** The source's spec without its own run state and placement, with `replicas` applied. */
export function branchSpec(source: CocoonSetSpec, replicas: number | undefined): CocoonSetSpec {
  const { suspend: _suspend, nodeName: _nodeName, ...spec } = source;
  return replicas === undefined ? spec : { ...spec, agent: { ...spec.agent, replicas } };
}

function setExists(session: Session, name: string): CocoonError {
  return new CocoonError(
    "AlreadyExists",
    `cocoonset "${name}" already exists in namespace "${session.namespace}": a branch is a new set; choose another name`,
  );
}

export interface BranchRun {
  /** sub-agents of the new set (default: the source's). */
  replicas?: number;
  /** Wait until the new set is Ready at its generation; without it, return once it is created. */
  wait?: WaitOptions;
  onCreated?: (cs: CocoonSet) => void;
}

/**
 * Creates the set `newName` from the Ready checkpoint `checkpointName`. Refuses a checkpoint that is
 * not Ready (a set branched now would create no pod until it is) and one whose source set is gone
 * (a checkpoint records its members, not the set's spec).
 */
export async function branchFrom(
  session: Session,
  checkpointName: string,
  newName: string,
  run: BranchRun = {},
): Promise<CocoonSet> {
  const ck = await getCheckpoint(session, checkpointName);
  if (ck.metadata.deletionTimestamp)
    throw new CocoonError("CheckpointDeleting", `cocooncheckpoint "${checkpointName}" is being deleted`);
  const phase = ck.status?.phase;
  if (phase !== "Ready") {
    const why = ck.status?.message ? `: ${ck.status.message}` : "";
    throw new CocoonError(
      "CheckpointNotReady",
      `cocooncheckpoint "${checkpointName}" is not Ready (phase ${phase ?? "(none)"}${why}); a set branched now would create no pod until it is. Wait for it: kubectl wait --for=jsonpath='{.status.phase}'=Ready cocooncheckpoint/${checkpointName}`,
    );
  }
  const find = (name: string) =>
    unlessNotFound(() => session.client.get<CocoonSet>(COCOONSETS, session.namespace, name));
  if (await find(newName)) throw setExists(session, newName);
  const sourceName = ck.spec.cocoonSetRef.name;
  const source = await find(sourceName);
  if (!source) {
    throw new CocoonError(
      "SourceGone",
      `cocoonset "${sourceName}", which cocooncheckpoint "${checkpointName}" was taken from, no longer exists, and a checkpoint records its members, not the set's spec: create the CocoonSet yourself with the annotation ${ANN_FROM_CHECKPOINT}: ${checkpointName}. The checkpoint holds ${describeMembers(heldMembers(ck))}; a slot or toolbox of the new spec restores from the member of the same slot or toolbox name`,
    );
  }
  let cs: CocoonSet;
  try {
    cs = await session.client.create<CocoonSet>(COCOONSETS, session.namespace, {
      apiVersion: API_VERSION,
      kind: KIND_COCOONSET,
      metadata: {
        name: newName,
        namespace: session.namespace,
        annotations: { [ANN_FROM_CHECKPOINT]: checkpointName },
      },
      spec: branchSpec(source.spec, run.replicas),
    });
  } catch (err) {
    if (isAlreadyExists(err)) throw setExists(session, newName);
    throw err;
  }
  run.onCreated?.(cs);
  if (!run.wait) return cs;
  const warnings = WarningWatch.ofCreated(session, KIND_COCOONSET, cs);
  const state = await waitFor(
    session,
    setWait(newName, cs.metadata.generation ?? 0, { kind: "ready" }, warnings),
    run.wait,
  );
  return state?.cs ?? cs;
}
