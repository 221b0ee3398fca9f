// The CocoonHibernation reconciler (docs/hibernation.md): drives one pod's VM to hibernated
// or back to running by toggling the pod's hibernate annotation, and confirms the result from
// vk-cocoon's lifecycle annotations and the VM's :hibernate tag. Decisions live in decide.ts and
// status.ts; this file reads the cache, writes, and emits.

import type { Pod } from "../apis/core.ts";
import type { CocoonHibernation, CocoonHibernationStatus, HibernationDesire } from "../apis/v1/types.ts";
import { API_VERSION, KIND_COCOONHIBERNATION } from "../apis/v1/types.ts";
import type { Clock } from "../clock.ts";
import { ANN_VM_NAME, FINALIZER_COCOONHIBERNATION, TAG_HIBERNATE } from "../contract/keys.ts";
import { hibernateStatePatch, readHibernateState, vmNameOf } from "../contract/pod.ts";
import { isPodVMName, podVMName, REASON_FOREIGN_VM_NAME_IGNORED } from "../contract/vmname.ts";
import type { Client } from "../controller/client.ts";
import { isNotFound } from "../controller/errors.ts";
import type { EventRecorder, EventType } from "../controller/events.ts";
import type { Reconciler, Request, Result } from "../controller/reconciler.ts";
import { COCOONHIBERNATIONS, PODS } from "../controller/resources.ts";
import type { HibernateVerdict } from "../guestgate.ts";
import { log } from "../log.ts";
import { hibernatePhaseDurationSeconds, wakePhaseDurationSeconds } from "../metrics/cocoon.ts";
import type { SnapshotRegistry } from "../registry/index.ts";
import {
  decideHibernate,
  decideWake,
  hibernateReported,
  settledWake,
  type TagProbe,
  transitionFor,
  vmHeldByAnother,
  wakeReported,
} from "./decide.ts";
import {
  failedStatus,
  HIBERNATE_TIMEOUT_TEXT,
  pendingStatus,
  phaseStatus,
  REQUEUE_INTERVAL_MS,
  readyTransitionMs,
  WAKE_TIMEOUT_TEXT,
} from "./status.ts";
import type { HibernationView } from "./view.ts";
import { StripedLock } from "./vmlock.ts";

export interface HibernationDeps {
  /** Writes, and the one uncached read of the pod before a wake drops its tag; the rest reads view. */
  client: Client;
  view: HibernationView;
  registry: SnapshotRegistry;
  events: EventRecorder;
  clock: Clock;
  /** Asked before the pod is annotated to hibernate (docs/guest.md); absent: no guest hooks. */
  beforeHibernate?: (pod: Pod) => HibernateVerdict;
}

const REQUEUE: Result = { requeueAfterMs: REQUEUE_INTERVAL_MS };

export class HibernationReconciler implements Reconciler {
  private readonly deps: HibernationDeps;
  private readonly vmLocks = new StripedLock();
  /**
   * Per CR UID, the Ready.lastTransitionTime (ms) whose phase exit was already announced: a lagging
   * cache can show the same finished transition twice, and it must be counted once.
   */
  private readonly announcedExits = new Map<string, number>();

  constructor(deps: HibernationDeps) {
    this.deps = deps;
  }

  async reconcile(req: Request, signal: AbortSignal): Promise<Result> {
    const ch = this.deps.view.getHibernation(req.namespace, req.name);
    if (!ch) return {};
    if (ch.metadata.deletionTimestamp) return this.finalize(ch, signal);
    const finalizers = ch.metadata.finalizers ?? [];
    if (!finalizers.includes(FINALIZER_COCOONHIBERNATION)) {
      // The pass ends here so the next one reads the persisted object; status stays untouched.
      await this.deps.client.update(COCOONHIBERNATIONS, {
        ...ch,
        metadata: { ...ch.metadata, finalizers: [...finalizers, FINALIZER_COCOONHIBERNATION] },
      });
      return { requeue: true };
    }

    const podName = ch.spec?.podRef?.name ?? "";
    if (podName === "") {
      await this.writeStatus(ch, failedStatus(ch, "spec.podRef.name is required", this.deps.clock.now()));
      return {};
    }
    // Before the pod is read: a settled wake leaves the pod, its annotation and its tag to others.
    if (settledWake(ch)) return {};
    // A pod that arrives later is seen through the pod watch; the requeue is a safety net.
    const pod = await this.deps.view.getPod(req.namespace, podName);
    if (!pod) {
      await this.markPending(ch, `pod ${req.namespace}/${podName} not yet present`);
      return REQUEUE;
    }
    const vmName = vmNameOf(pod);
    if (vmName === "") {
      await this.markPending(ch, `pod ${req.namespace}/${podName} has no ${ANN_VM_NAME} annotation yet`);
      return REQUEUE;
    }

    const release = await this.vmLocks.acquire(vmName);
    try {
      log.debug(
        { namespace: req.namespace, name: req.name, desire: ch.spec.desire, vm: vmName },
        "reconcile CocoonHibernation",
      );
      switch (transitionFor(ch)) {
        case "Hibernate":
          return await this.hibernate(ch, pod, vmName, signal);
        case "Wake":
          return await this.wake(ch, pod, vmName, signal);
        default:
          await this.writeStatus(
            ch,
            failedStatus(ch, `unknown desire "${ch.spec.desire}"`, this.deps.clock.now()),
          );
          return {};
      }
    } finally {
      release();
    }
  }

  private async hibernate(
    ch: CocoonHibernation,
    pod: Pod,
    vmName: string,
    signal: AbortSignal,
  ): Promise<Result> {
    this.announceRetryAfterFailure(ch, "Hibernate");
    if (!readHibernateState(pod)) {
      // The VM's pre-hibernate hooks first; one failed under Fail keeps it running, Pending, saying why.
      const hooks = this.deps.beforeHibernate?.(pod);
      if (hooks && hooks.action !== "proceed") {
        await this.markPending(ch, hooks.message);
        return hooks.action === "refused" ? { requeueAfterMs: hooks.retryAfterMs } : REQUEUE;
      }
      await this.patchHibernateAnnotation(pod, true);
    }

    // Probe only once vk reports this round done: a stale tag from an earlier round would
    // otherwise confirm the hibernate at once.
    const probe = hibernateReported(pod) ? await this.probeTag(vmName, signal) : undefined;
    const outcome = decideHibernate(ch, probe, this.deps.clock.now());
    switch (outcome.kind) {
      case "probe-error":
        throw new Error(`probe ${vmName}:${TAG_HIBERNATE}: ${errorText(outcome.error)}`, {
          cause: outcome.error,
        });
      case "hibernated":
        this.announcePhaseExit(ch, "ok", "Normal", "Hibernated", `snapshot ${vmName} pushed to the registry`);
        await this.setPhase(ch, "Hibernated", vmName);
        return {};
      case "timed-out":
        this.announcePhaseExit(
          ch,
          "timeout",
          "Warning",
          "HibernateTimedOut",
          `snapshot ${vmName} not confirmed in the registry within ${HIBERNATE_TIMEOUT_TEXT}`,
        );
        await this.markFailed(ch, `hibernate not confirmed within ${HIBERNATE_TIMEOUT_TEXT}`);
        return {};
      case "waiting":
        await this.setPhase(ch, "Hibernating", vmName);
        return REQUEUE;
    }
  }

  private async wake(ch: CocoonHibernation, pod: Pod, vmName: string, signal: AbortSignal): Promise<Result> {
    this.announceRetryAfterFailure(ch, "Wake");
    // Only when set: a patch on every requeue would wake the pod watch for nothing.
    if (readHibernateState(pod)) await this.patchHibernateAnnotation(pod, false);

    const outcome = decideWake(ch, pod, this.deps.clock.now());
    switch (outcome.kind) {
      case "active":
        // The drop is irreversible: a lagging cache may show the pod running as it did before the
        // hibernate. The VM must have woken as the API server holds the pod.
        if (!(await this.wokenOnServer(pod))) {
          await this.setPhase(ch, "Waking", vmName);
          return REQUEUE;
        }
        // Before Active: a settled CR never comes back for the tag, and a snapshot left behind
        // would be restored by a later recreate of the pod. A refused delete is retried with backoff.
        await this.dropSnapshot(ch, pod.metadata.name ?? "", vmName, signal);
        this.announcePhaseExit(
          ch,
          "ok",
          "Normal",
          "WokenActive",
          `pod ${pod.metadata.namespace}/${pod.metadata.name} is running`,
        );
        await this.setPhase(ch, "Active", vmName);
        return {};
      case "timed-out":
        this.announcePhaseExit(
          ch,
          "timeout",
          "Warning",
          "WakeTimedOut",
          `vk-cocoon did not report the container running within ${WAKE_TIMEOUT_TEXT}`,
        );
        await this.markFailed(
          ch,
          `wake timed out after ${WAKE_TIMEOUT_TEXT}; vk-cocoon never reported the container running`,
        );
        return {};
      case "waiting":
        await this.setPhase(ch, "Waking", vmName);
        return REQUEUE;
    }
  }

  /**
   * Drops the VM's tag unless another live CR still tracks the VM, then the finalizer. The tag
   * delete is best-effort: a registry outage must not wedge the CR's deletion (a leaked tag is
   * reclaimed by the CocoonSet's teardown GC).
   */
  private async finalize(ch: CocoonHibernation, signal: AbortSignal): Promise<Result> {
    const vmName = ch.status?.vmName ?? "";
    // status.vmName is the VM this CR touched, whatever its podRef names now.
    const release = vmName === "" ? undefined : await this.vmLocks.acquire(vmName);
    try {
      const namespace = ch.metadata.namespace ?? "";
      if (vmName !== "") {
        if (vmHeldByAnother(ch, this.deps.view.listHibernations(namespace))) {
          log.info(
            { namespace, name: ch.metadata.name, vm: vmName },
            "keeping hibernate snapshot: another live CocoonHibernation still tracks the VM",
          );
        } else {
          try {
            // Probe first: after a wake the tag is usually gone, and a DELETE of an absent tag makes
            // some registries materialise an empty repository.
            await this.dropSnapshot(ch, ch.spec?.podRef?.name ?? "", vmName, signal);
          } catch (err) {
            log.error(
              { namespace, name: ch.metadata.name, vm: vmName, err },
              "delete hibernate snapshot failed",
            );
          }
        }
      }
      this.announcedExits.delete(ch.metadata.uid ?? "");
      const finalizers = ch.metadata.finalizers ?? [];
      if (finalizers.includes(FINALIZER_COCOONHIBERNATION)) {
        await this.deps.client.update(COCOONHIBERNATIONS, {
          ...ch,
          metadata: {
            ...ch.metadata,
            finalizers: finalizers.filter((f) => f !== FINALIZER_COCOONHIBERNATION),
          },
        });
      }
      return {};
    } finally {
      release?.();
    }
  }

  private async probeTag(vmName: string, signal: AbortSignal): Promise<TagProbe> {
    try {
      return { present: await this.deps.registry.hasManifest(vmName, TAG_HIBERNATE, signal) };
    } catch (error) {
      return { error };
    }
  }

  private async wokenOnServer(cached: Pod): Promise<boolean> {
    let pod: Pod;
    try {
      pod = await this.deps.client.get<Pod>(
        PODS,
        cached.metadata.namespace ?? "",
        cached.metadata.name ?? "",
      );
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
    return pod.metadata.uid === cached.metadata.uid && !readHibernateState(pod) && wakeReported(pod);
  }

  private async patchHibernateAnnotation(pod: Pod, hibernate: boolean): Promise<void> {
    await this.deps.client.patch(
      PODS,
      pod.metadata.namespace ?? "",
      pod.metadata.name ?? "",
      hibernateStatePatch(hibernate),
    );
  }

  private async setPhase(
    ch: CocoonHibernation,
    phase: "Hibernating" | "Hibernated" | "Waking" | "Active",
    vmName: string,
  ): Promise<void> {
    await this.writeStatus(ch, phaseStatus(ch, phase, vmName, this.deps.clock.now()));
  }

  private async markFailed(ch: CocoonHibernation, message: string): Promise<void> {
    await this.writeStatus(ch, failedStatus(ch, message, this.deps.clock.now()));
  }

  private async markPending(ch: CocoonHibernation, message: string): Promise<void> {
    await this.writeStatus(ch, pendingStatus(ch, message, this.deps.clock.now()));
  }

  /** Merge-patches the whole status on the status subresource; undefined means nothing changed. */
  private async writeStatus(
    ch: CocoonHibernation,
    status: CocoonHibernationStatus | undefined,
  ): Promise<void> {
    if (status === undefined) return;
    const namespace = ch.metadata.namespace ?? "";
    const name = ch.metadata.name ?? "";
    await this.deps.client.patch(COCOONHIBERNATIONS, namespace, name, { status }, { subresource: "status" });
    if (status.phase !== ch.status?.phase) {
      log.info(
        { namespace, name, from: ch.status?.phase ?? "", to: status.phase, vm: status.vmName ?? "" },
        "CocoonHibernation phase changed",
      );
    }
  }

  private announceRetryAfterFailure(ch: CocoonHibernation, desire: HibernationDesire): void {
    if (ch.status?.phase !== "Failed") return;
    this.emit(ch, "Normal", "RetryRequested", `retrying ${desire} after prior failure`);
  }

  /**
   * Observes the time spent in Hibernating or Waking and emits the exit event, once per Ready
   * transition of this CR.
   */
  private announcePhaseExit(
    ch: CocoonHibernation,
    result: "ok" | "timeout",
    type: EventType,
    reason: string,
    message: string,
  ): void {
    const since = readyTransitionMs(ch);
    if (since === undefined) return;
    const uid = ch.metadata.uid ?? "";
    const announced = this.announcedExits.get(uid);
    if (announced !== undefined && since <= announced) return;
    this.announcedExits.set(uid, since);
    // Never negative: a Ready time can sit up to a few seconds ahead (status.ts, withReadyCondition).
    const seconds = Math.max(0, this.deps.clock.now() - since) / 1000;
    if (ch.status?.phase === "Hibernating") hibernatePhaseDurationSeconds.observe({ result }, seconds);
    if (ch.status?.phase === "Waking") wakePhaseDurationSeconds.observe({ result }, seconds);
    this.emit(ch, type, reason, message);
  }

  /**
   * Drops the VM's :hibernate tag only when it is the pod's own VM (`vk-<ns>-<pod>`): a vm-name
   * annotation, or a status recorded from one, naming another VM is left alone, with a Warning.
   */
  private async dropSnapshot(
    ch: CocoonHibernation,
    podName: string,
    vmName: string,
    signal: AbortSignal,
  ): Promise<void> {
    const namespace = ch.metadata.namespace ?? "";
    if (!isPodVMName(namespace, podName, vmName)) {
      this.emit(
        ch,
        "Warning",
        REASON_FOREIGN_VM_NAME_IGNORED,
        `${vmName} is not the VM of pod ${namespace}/${podName} (${podVMName(namespace, podName)}); its :hibernate tag is not deleted`,
      );
      return;
    }
    await this.deps.registry.deleteIfPresent(vmName, TAG_HIBERNATE, signal);
  }

  private emit(ch: CocoonHibernation, type: EventType, reason: string, message: string): void {
    this.deps.events.event(
      { apiVersion: API_VERSION, kind: KIND_COCOONHIBERNATION, metadata: ch.metadata },
      type,
      reason,
      message,
    );
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
