// The CocoonSet reconcile pass, in the order of the spec's numbered list. Each step lives in its own
// module under steps/ (or, for a feature beyond the spec, in that feature's room, built by its
// factory) and returns CONTINUE or a result that ends the pass; nothing else happens here but a
// step's closing status and the wake-up for the idle and expiry policy's next deadline.

import type { BranchingDeps } from "../checkpoint/branch.ts";
import { branchStep } from "../checkpoint/branch.ts";
import type { Reconciler, Request, Result } from "../controller/reconciler.ts";
import { idlePolicyStep, wakeForPolicyDeadline } from "../idle/step.ts";
import { forgetSetSeries } from "../metrics/forget.ts";
import { classifyPods } from "../pass/classify.ts";
import { Pass, type PassDeps, type Step } from "../pass/pass.ts";
import { refuseCollidingNames } from "./steps/collision.ts";
import { reconcileFailedMain } from "./steps/failed.ts";
import { ensureFinalizer } from "./steps/finalizer.ts";
import { holdIncompatibleSnapshots } from "./steps/heldsnapshots.ts";
import { reconcileMain } from "./steps/main.ts";
import { reconcileMigration } from "./steps/migrate.ts";
import { stampGeneration } from "./steps/stamp.ts";
import { patchStatus, writeStatus } from "./steps/status.ts";
import { reconcileSubAgents } from "./steps/subagents.ts";
import { reconcileSuspend } from "./steps/suspend.ts";
import { teardown } from "./steps/teardown.ts";
import { reconcileToolboxes } from "./steps/toolboxes.ts";
import { reconcileUnsuspend } from "./steps/unsuspend.ts";
import { reconcileWake } from "./steps/wake.ts";

/** The pass's collaborators, and those of the feature steps it composes. */
export interface CocoonSetDeps extends PassDeps {
  /** Checkpoints to branch new sets from; absent: a from-checkpoint set waits, saying why. */
  branching?: BranchingDeps;
}

/**
 * Steps 3 and 5–14, with the feature steps in their places; step 1 (fetch), 2 (teardown) and 4
 * (classify) are the pass's own set-up.
 */
function cocoonSetSteps(deps: CocoonSetDeps): readonly Step[] {
  return [
    ensureFinalizer, // 3
    // A set whose VM names are also an earlier set's is refused before it touches a pod or a tag.
    refuseCollidingNames,
    // An idle or expired set gets spec.suspend=true here, before the generation stamp and step 6, so
    // this same pass stamps the new generation and suspends.
    idlePolicyStep(),
    stampGeneration, // 5
    // A set annotated from-checkpoint is seeded from the checkpoint before its first pod, whatever
    // its suspend state: step 6 would otherwise create a suspended set's main fresh.
    branchStep(deps.branching),
    reconcileSuspend, // 6
    // A resumed set whose snapshots the edited spec could not restore keeps them, Failed.
    holdIncompatibleSnapshots,
    reconcileFailedMain, // 7
    reconcileMigration, // 8
    reconcileWake, // 9
    reconcileUnsuspend, // 10
    reconcileMain, // 11
    reconcileSubAgents, // 12
    reconcileToolboxes, // 13
    patchStatus, // 14
  ];
}

export class CocoonSetReconciler implements Reconciler {
  private readonly deps: CocoonSetDeps;
  private readonly steps: readonly Step[];

  constructor(deps: CocoonSetDeps) {
    this.deps = deps;
    this.steps = cocoonSetSteps(deps);
  }

  async reconcile(req: Request, signal: AbortSignal): Promise<Result> {
    // 1. Fetch from the cache; a set that is gone needs nothing.
    const cs = this.deps.view.getCocoonSet(req.namespace, req.name);
    if (!cs) {
      // Nothing is left to vouch for or count: a set deleted while suspended leaves no confirmation
      // behind, and none of its metric series.
      this.deps.suspendConfirmations?.forget(`${req.namespace}/${req.name}`);
      this.deps.failedMains?.forget(`${req.namespace}/${req.name}`);
      forgetSetSeries(req.namespace, req.name);
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
    for (const step of this.steps) {
      const outcome = await step(pass);
      if (!outcome.done) continue;
      if (outcome.phase) await writeStatus(pass, outcome.phase);
      return wakeForPolicyDeadline(outcome.result, pass.cs, pass.deps.clock.now(), pass.deps.activity);
    }
    return wakeForPolicyDeadline({}, pass.cs, pass.deps.clock.now(), pass.deps.activity);
  }
}
