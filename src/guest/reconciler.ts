// The guest hooks reconciler, one pod per request (docs/guest.md). For the VM a pod runs now it runs
// what that VM owes, in order: after a clone or a wake (the built-in refresh, then the policy's
// hooks), after its set's claim, and before a hibernate someone asked for. Each phase ends with one
// patch of the pod's record, which the gates read; a VM whose phases are recorded costs no exec and
// no write. A hook never deletes anything and never decides a snapshot's fate: a failed one only
// keeps a member from Ready, or a VM from hibernating, and says why.

import { randomBytes } from "node:crypto";
import type { Pod } from "../apis/core.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import {
  type CocoonGuestPolicy,
  type HookPoint,
  READ_OWNER_STEP,
  REFRESH_STEP,
  WRITE_OWNER_STEP,
} from "../apis/v1alpha1/types.ts";
import type { Clock } from "../clock.ts";
import { LABEL_COCOONSET } from "../contract/keys.ts";
import { isControlledBy, type PodMeta, vmNameOf } from "../contract/pod.ts";
import type { Client } from "../controller/client.ts";
import { isInvalid, isNotFound } from "../controller/errors.ts";
import type { EventRecorder } from "../controller/events.ts";
import type { PodExecutor } from "../controller/exec.ts";
import type { Reconciler, Request, Result } from "../controller/reconciler.ts";
import { PODS } from "../controller/resources.ts";
import type { Logger } from "../log.ts";
import { guestHooksTotal } from "../metrics/guest.ts";
import { formatRFC3339 } from "../rfc3339.ts";
import {
  claimOf,
  currentRecord,
  dueWork,
  guestPolicyName,
  type HookRun,
  hookable,
  hooksAt,
  nextRetry,
  originFromMark,
  ownerMark,
  ownerStepRun,
  postPoint,
  postRuns,
  READ_OWNER_COMMAND,
  REFRESH_ENTROPY_BYTES,
  refreshCommand,
  vmIDOf,
  type Work,
  WRITE_OWNER_COMMAND,
} from "./decide.ts";
import {
  ANN_GUEST_HOOKS,
  REASON_EVENT_HOOK_FAILED,
  REASON_EVENT_HOOK_IGNORED,
  REASON_EVENT_HOOK_SUCCEEDED,
} from "./keys.ts";
import {
  encodeGuestHooksRecord,
  type GuestHooksRecord,
  type Origin,
  type PhaseRecord,
  readGuestHooksRecord,
} from "./record.ts";
import type { PreHibernateRequests } from "./requests.ts";
import { bounded, type HookOutcome, type HookTarget, runHook } from "./run.ts";

/** How events name a step: by its name, point and pod, never its command. */
const describeRun = (run: HookRun, pod: Pod): string =>
  `hook ${run.name} (${run.point}) on pod ${pod.metadata.name}`;

/** Cached reads: the pod and its set. */
export interface GuestView {
  getPod(namespace: string, name: string): Pod | undefined;
  getCocoonSet(namespace: string, name: string): CocoonSet | undefined;
}

/** The policies, cached; undefined when the namespace has none of that name (or the kind is not served). */
export type GuestPolicyLookup = (namespace: string, name: string) => CocoonGuestPolicy | undefined;

export interface GuestDeps {
  client: Client;
  view: GuestView;
  policy: GuestPolicyLookup;
  executor: PodExecutor;
  requests: PreHibernateRequests;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
  /** A claim's parameters, handed to PostClaim hooks; absent when pools are not served. */
  claimParameters?: (namespace: string, claim: string) => Record<string, string> | undefined;
  /** The refresh's randomness; default crypto's. */
  random?: (bytes: number) => Uint8Array;
}

/** What a hook reads on its stdin: where it runs and why; a PostClaim hook also the claim's parameters. */
interface HookContext {
  point: HookPoint;
  namespace: string;
  pod: string;
  cocoonSet: string;
  vmName: string;
  origin?: Origin;
  claim?: { name: string; parameters: Record<string, string> };
}

export class GuestReconciler implements Reconciler {
  private readonly deps: GuestDeps;
  /**
   * The records this process wrote that the cache may not show yet, by pod (with its uid): a pass on
   * a stale cache would otherwise run a recorded phase again.
   */
  private readonly written = new Map<string, { uid: string; value: string }>();

  constructor(deps: GuestDeps) {
    this.deps = deps;
  }

  async reconcile(req: Request, signal: AbortSignal): Promise<Result> {
    const { view, requests } = this.deps;
    const pod = view.getPod(req.namespace, req.name);
    if (!pod || pod.metadata.deletionTimestamp) {
      requests.forget(req.namespace, req.name);
      this.written.delete(`${req.namespace}/${req.name}`);
      return {};
    }
    const cs = view.getCocoonSet(req.namespace, pod.metadata.labels?.[LABEL_COCOONSET] ?? "");
    if (!cs || !isControlledBy(pod, cs.metadata) || !hookable(pod)) return {};
    const policyName = guestPolicyName(cs);
    const policy = policyName ? this.deps.policy(req.namespace, policyName) : undefined;
    const vmID = vmIDOf(pod);
    if (!policy || vmID === "") return {};
    let record = currentRecord(readGuestHooksRecord(this.newestRecordOf(pod)), vmID);
    for (;;) {
      const work = dueWork(pod, cs, policy, record, requests.has(pod, vmID), this.deps.clock.now());
      if (work === undefined) break;
      record = await this.runPhase(work, pod, cs, policy, record, signal);
      await this.writeRecord(pod, record);
    }
    // Nothing is due any more, so a pre-hibernate request is answered by the record: the phase just
    // run, or one this process recorded that a pass on a stale cache asked for again. Kept, it would
    // run the hook unasked once a failure came due again, in a VM no one is hibernating any more.
    requests.done(pod, vmID);
    const retry = nextRetry(record, policy);
    return retry === undefined ? {} : { requeueAfterMs: Math.max(1, retry - this.deps.clock.now()) };
  }

  private async runPhase(
    work: Work,
    pod: Pod,
    cs: CocoonSet,
    policy: CocoonGuestPolicy,
    record: GuestHooksRecord,
    signal: AbortSignal,
  ): Promise<GuestHooksRecord> {
    const target = this.target(pod, signal);
    if (work === "post") {
      let origin = record.origin;
      if (origin === undefined) {
        const read = await this.classify(pod, cs, signal);
        if ("failed" in read) {
          return {
            ...record,
            post: this.phase(policy, { ok: false, hook: READ_OWNER_STEP, message: read.failed }),
          };
        }
        origin = read.origin;
      }
      const runs = postRuns(policy, origin).map((run) =>
        run.name === REFRESH_STEP
          ? { ...run, command: refreshCommand(origin, pod.metadata.name ?? "", this.deps.clock.now()) }
          : run,
      );
      const context = this.context(postPoint(origin), pod, cs, { origin });
      let result = await this.runAll(target, cs, pod, runs, context);
      if (result.ok) result = await this.markOwner(pod, cs, origin, target);
      return { ...record, origin, post: this.phase(policy, result) };
    }
    if (work === "claim") {
      const name = claimOf(cs);
      const parameters = this.deps.claimParameters?.(cs.metadata.namespace ?? "", name) ?? {};
      const context = this.context("PostClaim", pod, cs, { claim: { name, parameters } });
      const result = await this.runAll(target, cs, pod, hooksAt(policy, "PostClaim"), context);
      return { ...record, claim: { name, ...this.phase(policy, result) } };
    }
    const context = this.context("PreHibernate", pod, cs, {});
    const result = await this.runAll(target, cs, pod, hooksAt(policy, "PreHibernate"), context);
    return { ...record, preHibernate: this.phase(policy, result) };
  }

  /**
   * Where the VM's state came from, by the owner mark its guest carries. A guest whose mark cannot be
   * read is reported as a failed PostClone step: what it owes is not known.
   */
  private async classify(
    pod: Pod,
    cs: CocoonSet,
    signal: AbortSignal,
  ): Promise<{ origin: Origin } | { failed: string }> {
    const run = ownerStepRun(READ_OWNER_STEP, READ_OWNER_COMMAND, "PostClone");
    let mark = "";
    const target = this.target(pod, signal);
    const reading: PodExecutor = {
      exec: async (request) => {
        const result = await this.deps.executor.exec(request);
        mark = result.stdout.toString("utf8");
        return result;
      },
    };
    const outcome = await runHook({ ...target, executor: reading }, run, undefined);
    if (!outcome.ok) {
      this.reportFailure(cs, pod, run, outcome);
      return { failed: outcome.message };
    }
    return { origin: originFromMark(mark, ownerMark(vmNameOf(pod), cs.metadata.uid ?? "")) };
  }

  /** The post phase's last step: the guest is marked as this VM's own, so its next wake is a wake. */
  private async markOwner(
    pod: Pod,
    cs: CocoonSet,
    origin: Origin,
    target: HookTarget,
  ): Promise<{ ok: true } | { ok: false; hook: string; message: string }> {
    const run = ownerStepRun(WRITE_OWNER_STEP, WRITE_OWNER_COMMAND, postPoint(origin));
    const outcome = await runHook(target, run, Buffer.from(ownerMark(vmNameOf(pod), cs.metadata.uid ?? "")));
    if (outcome.ok) return { ok: true };
    this.reportFailure(cs, pod, run, outcome);
    return { ok: false, hook: run.name, message: outcome.message };
  }

  /**
   * The hooks in order. A Fail hook that fails ends the phase (the hooks after it do not run); one
   * under Ignore is reported and the phase goes on.
   */
  private async runAll(
    target: HookTarget,
    cs: CocoonSet,
    pod: Pod,
    runs: readonly HookRun[],
    context: HookContext,
  ): Promise<{ ok: true } | { ok: false; hook: string; message: string }> {
    for (const run of runs) {
      // The refresh reads the operator's randomness; a policy's hook reads its context.
      const stdin =
        run.name === REFRESH_STEP
          ? (this.deps.random ?? randomBytes)(REFRESH_ENTROPY_BYTES)
          : Buffer.from(`${JSON.stringify(context)}\n`);
      const outcome = await runHook(target, run, stdin);
      if (outcome.ok) {
        guestHooksTotal.inc({ point: run.point, result: "succeeded" });
        this.deps.events.event(
          cs,
          "Normal",
          REASON_EVENT_HOOK_SUCCEEDED,
          `${describeRun(run, pod)} succeeded in ${outcome.durationMs}ms`,
        );
        continue;
      }
      this.reportFailure(cs, pod, run, outcome);
      if (run.failurePolicy === "Fail") return { ok: false, hook: run.name, message: outcome.message };
    }
    return { ok: true };
  }

  /** A failed step's Warning event and count; under Fail, a log line too. Never the command. */
  private reportFailure(cs: CocoonSet, pod: Pod, run: HookRun, outcome: HookOutcome): void {
    const tries = `after ${outcome.attempts} attempt${outcome.attempts === 1 ? "" : "s"}`;
    if (run.failurePolicy === "Ignore") {
      guestHooksTotal.inc({ point: run.point, result: "ignored" });
      this.deps.events.event(
        cs,
        "Warning",
        REASON_EVENT_HOOK_IGNORED,
        `${describeRun(run, pod)} failed ${tries}, ignored: ${outcome.message}`,
      );
      return;
    }
    guestHooksTotal.inc({ point: run.point, result: "failed" });
    this.deps.events.event(
      cs,
      "Warning",
      REASON_EVENT_HOOK_FAILED,
      `${describeRun(run, pod)} failed ${tries}: ${outcome.message}`,
    );
    this.deps.log.info(
      {
        cocoonset: `${cs.metadata.namespace}/${cs.metadata.name}`,
        pod: pod.metadata.name,
        hook: run.name,
        point: run.point,
      },
      `guest hook failed: ${outcome.message}`,
    );
  }

  private phase(
    policy: CocoonGuestPolicy,
    result: { ok: true } | { ok: false; hook: string; message: string },
  ): PhaseRecord {
    return {
      result: result.ok ? "Succeeded" : "Failed",
      at: formatRFC3339(this.deps.clock.now()),
      policyGeneration: policy.metadata.generation ?? 0,
      ...(result.ok ? {} : { hook: result.hook, message: bounded(result.message) }),
    };
  }

  private context(point: HookPoint, pod: Pod, cs: CocoonSet, extra: Partial<HookContext>): HookContext {
    return {
      point,
      namespace: pod.metadata.namespace ?? "",
      pod: pod.metadata.name ?? "",
      cocoonSet: cs.metadata.name ?? "",
      vmName: vmNameOf(pod),
      ...extra,
    };
  }

  private target(pod: Pod, signal: AbortSignal): HookTarget {
    return {
      namespace: pod.metadata.namespace ?? "",
      pod: pod.metadata.name ?? "",
      executor: this.deps.executor,
      clock: this.deps.clock,
      signal,
    };
  }

  /** The pod, with the record this process last wrote on it when the cache does not show that yet. */
  private newestRecordOf(pod: Pod): PodMeta {
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    const written = this.written.get(key);
    const cached = pod.metadata.annotations?.[ANN_GUEST_HOOKS];
    if (!written || written.uid !== pod.metadata.uid || written.value === cached) {
      this.written.delete(key);
      return pod;
    }
    return { metadata: { annotations: { [ANN_GUEST_HOOKS]: written.value } } };
  }

  /**
   * One merge patch, guarded by the pod's uid (a replaced pod's record is not this VM's): a pod gone
   * or replaced meanwhile needs no record.
   */
  private async writeRecord(pod: Pod, record: GuestHooksRecord): Promise<void> {
    const value = encodeGuestHooksRecord(record);
    try {
      await this.deps.client.patch(PODS, pod.metadata.namespace ?? "", pod.metadata.name ?? "", {
        metadata: { uid: pod.metadata.uid, annotations: { [ANN_GUEST_HOOKS]: value } },
      });
      this.written.set(`${pod.metadata.namespace}/${pod.metadata.name}`, {
        uid: pod.metadata.uid ?? "",
        value,
      });
    } catch (error) {
      // The API server refuses a patch whose uid is not the pod's (the uid is immutable): a pod of the
      // same name made since is not the VM this record is about.
      if (!isNotFound(error) && !isInvalid(error)) throw error;
    }
  }
}
