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
import type { CocoonSet } from "../apis/v1/types.ts";
import type { CocoonCheckpoint } from "../apis/v1alpha1/types.ts";
import { describeMismatches } from "../contract/restoredeps.ts";
import { unlessNotFound } from "../controller/errors.ts";
import { COCOONCHECKPOINTS, COCOONSETS } from "../controller/resources.ts";
import { branchedCondition, type Held, heldAgainst, isBranchUnderWay } from "../holds.ts";
import {
  checkpointBranchBlobsTotal,
  checkpointBranchesTotal,
  checkpointBranchFailuresTotal,
} from "../metrics/checkpoint.ts";
import { forEachLimited } from "../pass/limit.ts";
import { CONTINUE, finishInPhase, type Pass, type Step, type StepOutcome } from "../pass/pass.ts";
import { oweRestores, recordVMs } from "../pass/reclaimrecord.ts";
import { patchSetStatus, persistReclaim, reclaimRecord, setEvent } from "../pass/writes.ts";
import type { CheckpointRegistry } from "../registry/index.ts";
import type { CheckpointReader } from "./catalog.ts";
import { copyToHibernate } from "./copy.ts";
import {
  ANN_FROM_CHECKPOINT,
  BRANCH_COPY_FAILED,
  BRANCH_COPYING,
  BRANCH_INCOMPATIBLE,
  BRANCH_NOT_APPLIED,
  BRANCH_WAITING,
  CONDITION_BRANCHED,
  REASON_BRANCH_FAILED,
  REASON_BRANCH_INCOMPATIBLE,
  REASON_BRANCH_NOT_APPLIED,
  REASON_BRANCH_WAITING,
  REASON_BRANCHED,
} from "./keys.ts";
import { type BranchCopy, type IncompatibleCopy, incompatibleCopies, planBranch } from "./members.ts";

/** A set waiting for its checkpoint looks again after this; the checkpoint's own events come sooner. */
export const BRANCH_WAIT_MS = 30_000;

const REASON_FROM_CHECKPOINT = "FromCheckpoint";

/** A branch's VM copies in flight at once unless configured (--copy-concurrency). */
export const DEFAULT_COPY_CONCURRENCY = 4;

/** What the branch step reads and copies through. */
export interface BranchingDeps {
  checkpoints: CheckpointReader;
  registry: CheckpointRegistry;
  /** VM copies in flight at once (each copies its blobs one after another); default DEFAULT_COPY_CONCURRENCY. */
  copyConcurrency?: number;
}

/**
 * The branch step, run before step 6 (src/cocoonset/reconciler.ts): a set created suspended, or
 * suspended by its idle or expiry policy, branches (or waits) before the suspend path could create
 * a fresh main. Without `branching` (no checkpoint support in this process) a from-checkpoint set
 * waits, saying why.
 */
export function branchStep(branching: BranchingDeps | undefined): Step {
  return (pass) => branchFromCheckpoint(pass, branching);
}

/** CONTINUE when there is nothing (more) to branch. */
async function branchFromCheckpoint(pass: Pass, branching: BranchingDeps | undefined): Promise<StepOutcome> {
  const name = pass.cs.metadata.annotations?.[ANN_FROM_CHECKPOINT];
  const branched = branchedCondition(pass.cs);
  if (name === undefined) {
    // Removed before the branch finished: the set starts from its own state, and a branch left marked
    // under way would hold the checkpoint's delete.
    if (branched?.status === "False" && branched.reason !== BRANCH_NOT_APPLIED) {
      await writeBranched(
        pass,
        "False",
        BRANCH_NOT_APPLIED,
        `${ANN_FROM_CHECKPOINT} was removed before the branch finished; the set starts from its own state`,
      );
    }
    return CONTINUE;
  }
  if (branched?.status === "True" || branched?.reason === BRANCH_NOT_APPLIED) return CONTINUE;
  // A set that has had pods keeps its own state: the annotation no longer acts, and says so once. A
  // False condition of another reason is this step's own mark of a branch waiting or in progress,
  // written before any pod and before the reclaim record it wrote itself.
  if (!branched && hasHadPods(pass)) return notApplied(pass, name);
  // No pod is created before the branch is done, so a set with pods has branched, whatever its cached
  // condition says (the pods can reach the cache before that pass's Branched=True write). Copying now
  // would write over VMs that run, or have since hibernated, their own state.
  if (hasPods(pass)) return CONTINUE;

  const lookup = branching ? branching.checkpoints.getCheckpoint(pass.namespace, name) : "unavailable";
  if (!branching || lookup === "unavailable") {
    return waitForCheckpoint(
      pass,
      `cannot branch from CocoonCheckpoint ${name}: the CocoonCheckpoint API is not served`,
    );
  }
  if (!lookup) return waitForCheckpoint(pass, `CocoonCheckpoint ${name} not found`);
  // A branch under way holds the checkpoint's delete (its finalizer waits for it), so it may finish.
  if (lookup.metadata.deletionTimestamp && !isBranchUnderWay(branched))
    return waitForCheckpoint(pass, `CocoonCheckpoint ${name} is being deleted`);
  if (lookup.status?.phase !== "Ready") {
    return waitForCheckpoint(
      pass,
      `CocoonCheckpoint ${name} is not Ready (phase ${lookup.status?.phase ?? "none"})`,
    );
  }
  const { registry } = branching;

  const plan = planBranch(pass.cs, lookup);
  // Refused before anything is written: a copy the new pods could not restore would be dropped by
  // the image rule, or refused by vk-cocoon, and the slot would boot fresh under a Branched set.
  const incompatible = incompatibleCopies(pass.cs, plan);
  if (incompatible.length > 0) return refuseIncompatible(pass, name, incompatible);
  const targets = plan.map((c) => c.targetVM);
  const copying = `copying ${plan.length} snapshots of CocoonCheckpoint ${name}`;
  if (!isBranchUnderWay(branched)) {
    // A restore takes a set only once its branch is done; one that held the set before the annotation
    // came keeps it, and the branch waits for it to let go.
    const cachedHold = heldAgainst(pass.cs, "branch");
    if (cachedHold) return waitForHolder(pass, cachedHold);
    await writeBranched(pass, "False", BRANCH_COPYING, copying);
    // A checkpoint's delete lists the sets branching from it on the API server before its first tag
    // delete. Its delete may have begun since the cache was read: then that list may have missed this
    // branch, so the branch does not start (the Waiting condition it writes releases the delete).
    const current = await unlessNotFound(() =>
      pass.deps.client.get<CocoonCheckpoint>(COCOONCHECKPOINTS, pass.namespace, name),
    );
    if (!current) return waitForCheckpoint(pass, `CocoonCheckpoint ${name} not found`);
    if (current.metadata.deletionTimestamp) {
      return waitForCheckpoint(pass, `CocoonCheckpoint ${name} is being deleted`);
    }
    // The restore's hold is judged on the API server's set too: the cache may not show it yet.
    const server = await pass.deps.client.get<CocoonSet>(COCOONSETS, pass.namespace, pass.name);
    const held = heldAgainst(server, "branch");
    if (held) return waitForHolder(pass, held);
  }
  await persistReclaim(pass, recordVMs(reclaimRecord(pass), pass.generation, targets));
  // Progress shows in the condition as copies land; copies already in place write nothing, so a
  // retry that fails the same way writes nothing either (its own writes would wake it in a loop).
  // The bytes are those of the copies in place; "sent" counts what went over the wire for them,
  // which a blob already in the target or mounted adds nothing to.
  const progress = { copies: 0, bytes: 0, sent: 0 };
  const totalBytes = plan.reduce((sum, c) => sum + (c.member.bytes ?? 0), 0);
  const progressText = () =>
    `${progress.copies} of ${plan.length} copied, ${progress.bytes} of ${totalBytes} bytes` +
    (progress.sent > 0 ? `, ${progress.sent} bytes sent` : "");
  // Copies run a few at a time; their condition writes go one after another.
  let writing: Promise<void> = Promise.resolve();
  const inTurn = (write: () => Promise<void>): Promise<void> => {
    const turn = writing.then(write);
    writing = turn.catch(() => undefined);
    return turn;
  };
  try {
    await forEachLimited(plan, branching.copyConcurrency ?? DEFAULT_COPY_CONCURRENCY, async (copy) => {
      const { landed, blobs, bytesSent } = await copyToHibernate(
        registry,
        copy,
        { namespace: pass.namespace, name: pass.name, uid: pass.cs.metadata.uid ?? "" },
        pass.signal,
      );
      for (const method of blobs) checkpointBranchBlobsTotal.inc({ method });
      progress.copies++;
      progress.bytes += copy.member.bytes ?? 0;
      progress.sent += bytesSent;
      if (landed && progress.copies < plan.length) {
        await inTurn(() => writeBranched(pass, "False", BRANCH_COPYING, `${copying}: ${progressText()}`));
      }
    });
  } catch (err) {
    checkpointBranchFailuresTotal.inc({ namespace: pass.namespace, cocoonset: pass.name });
    const message = `branch from CocoonCheckpoint ${name}: ${(err as Error).message}`;
    setEvent(pass, "Warning", REASON_BRANCH_FAILED, message);
    await writeBranched(pass, "False", BRANCH_COPY_FAILED, `${message}; retrying (${progressText()})`);
    throw err;
  }
  await persistReclaim(pass, oweRestores(reclaimRecord(pass), targets));
  const message = branchedMessage(lookup, plan);
  await writeBranched(pass, "True", REASON_FROM_CHECKPOINT, message);
  setEvent(pass, "Normal", REASON_BRANCHED, message);
  checkpointBranchesTotal.inc({ namespace: pass.namespace, cocoonset: pass.name });
  return CONTINUE;
}

/**
 * Branched=False naming each member and field that differs, and a Warning, both only when that
 * changes; the set is Failed and no pod is created until a spec edit makes the slots match.
 */
async function refuseIncompatible(
  pass: Pass,
  checkpointName: string,
  incompatible: readonly IncompatibleCopy[],
): Promise<StepOutcome> {
  const members = incompatible.map(({ copy, mismatches }) => {
    const m = copy.member;
    const place = m.role === "toolbox" ? `toolbox ${m.toolbox}` : `${m.role} (slot ${m.slot})`;
    return `member ${place}, VM ${m.vmName}: ${describeMismatches(mismatches)}`;
  });
  const message = `cannot branch from CocoonCheckpoint ${checkpointName}: its snapshots cannot restore as this spec asks; ${members.join("; ")}`;
  const current = branchedCondition(pass.cs);
  if (current?.reason !== BRANCH_INCOMPATIBLE || current.message !== message) {
    await writeBranched(pass, "False", BRANCH_INCOMPATIBLE, message);
    setEvent(pass, "Warning", REASON_BRANCH_INCOMPATIBLE, message);
  }
  return finishInPhase("Failed", {});
}

/** Every planned copy restores: incompatible ones refuse the branch before it starts. */
function branchedMessage(checkpoint: CocoonCheckpoint, plan: readonly BranchCopy[]): string {
  const source = checkpoint.spec.cocoonSetRef.name;
  return `branched from CocoonCheckpoint ${checkpoint.metadata.name} of CocoonSet ${source}: ${plan.length} VMs restore from it`;
}

/** Pods now or pods in the status. */
function hasPods(pass: Pass): boolean {
  const status = pass.cs.status;
  return pass.pods.all.size > 0 || (status?.agents?.length ?? 0) > 0 || (status?.toolboxes?.length ?? 0) > 0;
}

/** Pods, or VMs in the reclaim record: the set has state of its own. */
function hasHadPods(pass: Pass): boolean {
  return hasPods(pass) || reclaimRecord(pass).vms.length > 0;
}

/**
 * Nothing is created while the checkpoint cannot be used: the condition and an event say why, phase
 * Pending, a later look.
 */
async function waitForCheckpoint(pass: Pass, message: string): Promise<StepOutcome> {
  const full = `${message}; no pod is created until it is Ready`;
  await writeBranched(pass, "False", BRANCH_WAITING, full);
  setEvent(pass, "Warning", REASON_BRANCH_WAITING, full);
  return finishInPhase("Pending", { requeueAfterMs: BRANCH_WAIT_MS });
}

/** Another holds the set (a restore): the condition and an event say so, phase Pending, a later look. */
async function waitForHolder(pass: Pass, held: Held): Promise<StepOutcome> {
  const current = branchedCondition(pass.cs);
  if (current?.reason !== held.reason || current.message !== held.message) {
    await writeBranched(pass, "False", held.reason, held.message);
    setEvent(pass, "Normal", held.reason, held.message);
  }
  return finishInPhase("Pending", { requeueAfterMs: BRANCH_WAIT_MS });
}

/** The annotation came to a set with state of its own: a Warning and a condition, once; nothing else. */
async function notApplied(pass: Pass, name: string): Promise<StepOutcome> {
  const message = `${ANN_FROM_CHECKPOINT}=${name} does not act: the set already has pods or snapshots of its own, which a branch never overwrites`;
  await writeBranched(pass, "False", BRANCH_NOT_APPLIED, message);
  setEvent(pass, "Warning", REASON_BRANCH_NOT_APPLIED, message);
  return CONTINUE;
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
  const current = branchedCondition(pass.cs);
  if (
    current?.status === status &&
    current.reason === reason &&
    current.message === message &&
    current.observedGeneration === condition.observedGeneration
  ) {
    return;
  }
  const conditions = setStatusCondition(pass.cs.status?.conditions ?? [], condition, pass.deps.clock.now());
  await patchSetStatus(pass, { conditions });
}
