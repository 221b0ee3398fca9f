// The CocoonSet reconcile pass, in the order of the spec's numbered list. Each step lives in its own
// module under steps/ and returns CONTINUE or a result that ends the pass; nothing else happens here
// but the wake-up for the idle and expiry policy's next deadline.

import { branchFromCheckpoint } from "../checkpoint/branch.ts";
import type { Reconciler, Request, Result } from "../controller/reconciler.ts";
import { nextDeadlineInMs } from "../idle/deadlines.ts";
import { readIdlePolicy } from "../idle/policy.ts";
import { applyIdlePolicy } from "../idle/step.ts";
import { classifyPods } from "./classify.ts";
import { type CocoonSetDeps, Pass, type StepOutcome } from "./pass.ts";
import { reconcileFailedMain } from "./steps/failed.ts";
import { ensureFinalizer } from "./steps/finalizer.ts";
import { reconcileMain } from "./steps/main.ts";
import { reconcileMigration } from "./steps/migrate.ts";
import { stampGeneration } from "./steps/stamp.ts";
import { patchStatus } from "./steps/status.ts";
import { reconcileSubAgents } from "./steps/subagents.ts";
import { reconcileSuspend } from "./steps/suspend.ts";
import { teardown } from "./steps/teardown.ts";
import { reconcileToolboxes } from "./steps/toolboxes.ts";
import { reconcileUnsuspend } from "./steps/unsuspend.ts";
import { reconcileWake } from "./steps/wake.ts";

type Step = (pass: Pass) => Promise<StepOutcome>;

/**
 * Steps 3 and 5–14, plus the idle and expiry policy; step 1 (fetch), 2 (teardown) and 4 (classify)
 * are the pass's own set-up.
 */
const STEPS: readonly Step[] = [
  ensureFinalizer, // 3
  // Issue 20 (beyond upstream): an idle or expired set gets spec.suspend=true here, before the
  // generation stamp and step 6, so this same pass stamps the new generation and suspends.
  applyIdlePolicy,
  stampGeneration, // 5
  reconcileSuspend, // 6
  reconcileFailedMain, // 7
  reconcileMigration, // 8
  reconcileWake, // 9
  reconcileUnsuspend, // 10
  // Issue 19: a set annotated from-checkpoint is seeded from the checkpoint before its first pod.
  branchFromCheckpoint,
  reconcileMain, // 11
  reconcileSubAgents, // 12
  reconcileToolboxes, // 13
  patchStatus, // 14
];

export class CocoonSetReconciler implements Reconciler {
  private readonly deps: CocoonSetDeps;

  constructor(deps: CocoonSetDeps) {
    this.deps = deps;
  }

  async reconcile(req: Request, signal: AbortSignal): Promise<Result> {
    // 1. Fetch from the cache; a set that is gone needs nothing.
    const cs = this.deps.view.getCocoonSet(req.namespace, req.name);
    if (!cs) {
      // Nothing is left to vouch for: a set deleted while suspended leaves no confirmation behind.
      this.deps.suspendConfirmations?.forget(`${req.namespace}/${req.name}`);
      return {};
    }
    // 2. A set being deleted takes the teardown path only.
    if (cs.metadata.deletionTimestamp) return teardown(cs, this.deps, signal);
    // 4. One classification of the owned pods for the whole pass.
    const owner = { name: cs.metadata.name ?? "", uid: cs.metadata.uid ?? "" };
    const listed = this.deps.view.listSetPods(req.namespace, req.name);
    // Pods created by earlier passes that the cache now shows are no longer expected; the pass takes
    // the rest as it is made, with no await in between.
    this.deps.expectations?.observeAll(listed);
    const pods = classifyPods(listed, owner);
    const pass = new Pass(cs, pods, this.deps, signal);
    for (const step of STEPS) {
      const outcome = await step(pass);
      if (outcome.done) return wakeForPolicyDeadline(outcome.result, pass);
    }
    return wakeForPolicyDeadline({}, pass);
  }
}

/**
 * The pass's result, requeued no later than the set's next idle or expiry deadline (issue 20): the
 * operator wakes for the deadline instead of polling. An immediate requeue stays as it is (its pass
 * computes the deadline again); a set without a pending deadline keeps its result.
 */
function wakeForPolicyDeadline(result: Result, pass: Pass): Result {
  if (result.requeue && !result.requeueAfterMs) return result;
  const inMs = nextDeadlineInMs(pass.cs, readIdlePolicy(pass.cs.metadata.annotations), pass.deps.clock.now());
  if (inMs === undefined) return result;
  return { ...result, requeueAfterMs: Math.min(result.requeueAfterMs || inMs, inMs) };
}
