// Branching: a new CocoonSet annotated `cocoonset.cocoonstack.io/from-checkpoint: <name>`
// starts from that checkpoint. Before its first pod, each slot the checkpoint holds gets the
// checkpoint's manifest copied into the new VM's repository as `:hibernate` (blobs by cross-repository
// mount, else streamed), and the reclaim record owes those VMs a restore. From there the spec's own
// machinery runs unchanged: steps 11–13 create the pods restore-marked (the image rule still drops a
// snapshot of another image), and step 10 drops each copied tag once its VM runs.
//
// The branch completes before any pod exists: the target VMs recorded (so any copy that lands is
// dropped in time), every copy done, the restores owed, then the Branched condition. A pass that
// cannot finish throws, so nothing is created over a half-copied set, and the retry resumes (a copy
// already in place is skipped). The checkpoint itself is only read.

import { type ConditionUpdate, setStatusCondition } from "../apis/status.ts";
import type { CocoonSet, Condition } from "../apis/v1/types.ts";
import type { CocoonCheckpoint } from "../apis/v1alpha1/types.ts";
import { TAG_HIBERNATE } from "../contract/keys.ts";
import {
  checkpointBranchBlobsTotal,
  checkpointBranchesTotal,
  checkpointBranchFailuresTotal,
} from "../metrics/checkpoint.ts";
import { CONTINUE, finishInPhase, type Pass, type Step, type StepOutcome } from "../pass/pass.ts";
import { oweRestores, recordVMs } from "../pass/reclaimrecord.ts";
import { patchSetStatus, persistReclaim, reclaimRecord, setEvent } from "../pass/writes.ts";
import type { CheckpointRegistry } from "../registry/index.ts";
import type { CheckpointReader } from "./catalog.ts";
import {
  ANN_FROM_CHECKPOINT,
  CONDITION_BRANCHED,
  REASON_BRANCH_FAILED,
  REASON_BRANCH_WAITING,
  REASON_BRANCHED,
} from "./keys.ts";
import { sameRepositoryBranchManifest } from "./manifest.ts";
import { type BranchCopy, planBranch } from "./members.ts";

/** A set waiting for its checkpoint looks again after this; the checkpoint's own events come sooner. */
export const BRANCH_WAIT_MS = 30_000;

const REASON_COPYING = "Copying";
const REASON_FROM_CHECKPOINT = "FromCheckpoint";

/** What the branch step reads and copies through. */
export interface BranchingDeps {
  checkpoints: CheckpointReader;
  registry: CheckpointRegistry;
}

/**
 * The branch step, run before step 11 (src/cocoonset/reconciler.ts). Without `branching` (no
 * checkpoint support in this process) a from-checkpoint set waits, saying why.
 */
export function branchStep(branching: BranchingDeps | undefined): Step {
  return (pass) => branchFromCheckpoint(pass, branching);
}

/** CONTINUE when there is nothing (more) to branch. */
async function branchFromCheckpoint(pass: Pass, branching: BranchingDeps | undefined): Promise<StepOutcome> {
  const name = pass.cs.metadata.annotations?.[ANN_FROM_CHECKPOINT];
  if (name === undefined) return CONTINUE;
  const branched = branchedCondition(pass.cs);
  if (branched?.status === "True") return CONTINUE;
  // A set that has had pods keeps its own state: the annotation no longer acts. A False condition is
  // this step's own mark of a branch in progress, whose reclaim record it wrote itself.
  if (!branched && hasHadPods(pass)) return CONTINUE;

  const lookup = branching ? branching.checkpoints.getCheckpoint(pass.namespace, name) : "unavailable";
  if (!branching || lookup === "unavailable") {
    return waitForCheckpoint(
      pass,
      `cannot branch from CocoonCheckpoint ${name}: the CocoonCheckpoint API is not served`,
    );
  }
  if (!lookup) return waitForCheckpoint(pass, `CocoonCheckpoint ${name} not found`);
  if (lookup.metadata.deletionTimestamp)
    return waitForCheckpoint(pass, `CocoonCheckpoint ${name} is being deleted`);
  if (lookup.status?.phase !== "Ready") {
    return waitForCheckpoint(
      pass,
      `CocoonCheckpoint ${name} is not Ready (phase ${lookup.status?.phase ?? "none"})`,
    );
  }
  const { registry } = branching;

  const plan = planBranch(pass.cs, lookup);
  const targets = plan.map((c) => c.targetVM);
  if (!branched) {
    await writeBranched(
      pass,
      "False",
      REASON_COPYING,
      `copying ${plan.length} snapshots of CocoonCheckpoint ${name}`,
    );
  }
  await persistReclaim(pass, recordVMs(reclaimRecord(pass), pass.generation, targets));
  try {
    for (const copy of plan) await copySnapshot(pass, registry, copy);
  } catch (err) {
    checkpointBranchFailuresTotal.inc({ namespace: pass.namespace, cocoonset: pass.name });
    setEvent(
      pass,
      "Warning",
      REASON_BRANCH_FAILED,
      `branch from CocoonCheckpoint ${name}: ${(err as Error).message}`,
    );
    throw err;
  }
  await persistReclaim(pass, oweRestores(reclaimRecord(pass), targets));
  const message = branchedMessage(lookup, plan);
  await writeBranched(pass, "True", REASON_FROM_CHECKPOINT, message);
  setEvent(pass, "Normal", REASON_BRANCHED, message);
  checkpointBranchesTotal.inc({ namespace: pass.namespace, cocoonset: pass.name });
  return CONTINUE;
}

function branchedMessage(checkpoint: CocoonCheckpoint, plan: readonly BranchCopy[]): string {
  const source = checkpoint.spec.cocoonSetRef.name;
  return `branched from CocoonCheckpoint ${checkpoint.metadata.name} of CocoonSet ${source}: ${plan.length} VMs restore from it`;
}

/** The new VM's `:hibernate` becomes the checkpointed manifest (by digest); in place already: skipped. */
async function copySnapshot(pass: Pass, registry: CheckpointRegistry, copy: BranchCopy): Promise<void> {
  const digest = copy.member.digest ?? "";
  if (copy.member.vmName === copy.targetVM) {
    // The checkpoint's own repository: the manifest PUT alone, under a digest of its own.
    const source = await registry.getManifest(copy.member.vmName, digest, pass.signal);
    const raw = sameRepositoryBranchManifest(source.raw, pass.namespace, pass.name);
    await registry.putManifest(copy.targetVM, TAG_HIBERNATE, raw, source.mediaType, pass.signal);
    return;
  }
  const present = await registry.headManifest(copy.targetVM, TAG_HIBERNATE, pass.signal);
  if (present?.digest === digest) return;
  const result = await registry.copyManifest(
    copy.member.vmName,
    digest,
    copy.targetVM,
    TAG_HIBERNATE,
    pass.signal,
  );
  for (const method of result.blobs) checkpointBranchBlobsTotal.inc({ method });
}

export function branchedCondition(cs: CocoonSet): Condition | undefined {
  return cs.status?.conditions?.find((c) => c.type === CONDITION_BRANCHED);
}

/** Pods now, pods in the status, or VMs in the reclaim record: the set has state of its own. */
function hasHadPods(pass: Pass): boolean {
  const status = pass.cs.status;
  return (
    pass.pods.all.size > 0 ||
    (status?.agents?.length ?? 0) > 0 ||
    (status?.toolboxes?.length ?? 0) > 0 ||
    reclaimRecord(pass).vms.length > 0
  );
}

/** Nothing is created while the checkpoint cannot be used: an event, phase Pending, a later look. */
function waitForCheckpoint(pass: Pass, message: string): StepOutcome {
  setEvent(pass, "Warning", REASON_BRANCH_WAITING, `${message}; no pod is created until it is Ready`);
  return finishInPhase("Pending", { requeueAfterMs: BRANCH_WAIT_MS });
}

async function writeBranched(
  pass: Pass,
  status: "True" | "False",
  reason: string,
  message: string,
): Promise<void> {
  const condition: ConditionUpdate = {
    type: CONDITION_BRANCHED,
    status,
    reason,
    message,
    ...(pass.generation === 0 ? {} : { observedGeneration: pass.generation }),
  };
  const conditions = setStatusCondition(pass.cs.status?.conditions ?? [], condition, pass.deps.clock.now());
  await patchSetStatus(pass, { conditions });
}
