// One pod on a simulated node: vk-cocoon's CreatePod / UpdatePod / DeletePod for it, serialized, plus
// virtual-kubelet's ProviderFailed handling and rate-limited retry.

import { randomUUID } from "node:crypto";
import type { Pod } from "../../../src/apis/core.ts";
import type { Clock } from "../../../src/clock.ts";
import {
  ANN_BACKEND,
  ANN_CLONE_FROM_DIR,
  ANN_FORK_FROM,
  ANN_HIBERNATE,
  ANN_IMAGE,
  ANN_IP,
  ANN_KEEP_SNAPSHOT_ON_DELETE,
  ANN_LIFECYCLE_OBSERVED_GENERATION,
  ANN_LIFECYCLE_STATE,
  ANN_LIFECYCLE_STATE_MESSAGE,
  ANN_MODE,
  ANN_OS,
  ANN_RESTORE_FROM_HIBERNATE,
  ANN_VM_ID,
  ANN_VM_NAME,
  ANN_VNC_PORT,
  LABEL_SNAPSHOT_CPU_CLASS,
  LIFECYCLE_CREATING,
  LIFECYCLE_FAILED,
  LIFECYCLE_HIBERNATED,
  LIFECYCLE_HIBERNATING,
  LIFECYCLE_READY,
  MANIFEST_ANN_BASE_IMAGE,
  TAG_HIBERNATE,
  TAG_LATEST,
} from "../../../src/contract/keys.ts";
import { resolveSnapshotOrigin, type SnapshotOrigin } from "./clone.ts";
import type { EvictionReason, Faults } from "./faults.ts";
import { Guest, type GuestState } from "./guest.ts";
import type { FetchedManifest, OciClient } from "./oci.ts";
import { type PodApi, podKey } from "./podapi.ts";
import type { VmEvent, VmRecord, VmSource } from "./record.ts";
import {
  annotation,
  flag,
  isMacOS,
  isManaged,
  podGeneration,
  roleForPod,
  shouldSnapshotVM,
  truncateMessage,
} from "./rules.ts";
import { DEFAULT_HYPERVISOR, pushSnapshot, readSnapshotHypervisor, readSnapshotId } from "./snapshot.ts";
import { evictedStatus, pendingStatus, rfc3339, runningStatus, succeededStatus } from "./status.ts";

export interface SimTimings {
  bootMs: number;
  readyMs: number;
  hibernateMs: number;
  wakeMs: number;
  deleteMs: number;
  /** How long an exec waits on a guest that does not answer SSH (vk-cocoon's SSH dial timeout). */
  sshDialTimeoutMs: number;
}

/** A pod's live VM as exec finds it (vk-cocoon's vmForPod): the guest behind the VM's IP. */
export interface ExecTarget {
  vmName: string;
  vmID: string;
  podUID: string;
  ip: string;
  guest: Guest;
  /** vk-cocoon's meta.IsWindowsPod: the pod's os annotation is windows. */
  windows: boolean;
}

/** What one simulated node shares with its pod workers. */
export interface NodeRuntime {
  name: string;
  cpuClass: string;
  internalIP: string;
  /** Live VMs on this node by VM name. */
  vms: Map<string, { vmID: string; guest: Guest }>;
  /** Node-local snapshot cache: VM name → snapshotId (the warm-wake cache). */
  snapshots: Map<string, string>;
  /** The guest state each node-local snapshot holds, by snapshotId. */
  snapshotGuests: Map<string, GuestState>;
  /** Live VMs by pod ("namespace/name"), for exec. */
  execTargets: Map<string, ExecTarget>;
}

export interface WorkerDeps {
  node: NodeRuntime;
  api: PodApi;
  oci: OciClient;
  faults: Faults;
  record: VmRecord;
  timings: SimTimings;
  clock: Clock;
  signal: AbortSignal;
  nextIP: () => string;
}

type LifecycleState =
  | typeof LIFECYCLE_CREATING
  | typeof LIFECYCLE_READY
  | typeof LIFECYCLE_HIBERNATING
  | typeof LIFECYCLE_HIBERNATED
  | typeof LIFECYCLE_FAILED;

interface LiveVm {
  vmID: string;
  ip: string;
  startedAt: string;
  guest: Guest;
}

/** A provider error: virtual-kubelet records ProviderFailed and retries the sync. */
class ProviderError extends Error {}

/** The messages evictPod and handleVMGone pass with each reason (provider/cocoon/provider.go). */
const EVICTION_MESSAGES: Record<EvictionReason, string> = {
  VMGone: "vm no longer exists",
  RestartCooldown: "restart cooldown not elapsed",
  RestartFailed: "restart vm failed",
  VMInspectTimeout: "vm inspect did not resolve within budget",
};

const MAX_RETRIES = 20;
const STALL_POLL_MS = 50;
/** Annotations vk itself writes; changes to them alone never trigger a sync. */
const VK_WRITTEN = new Set([
  ANN_LIFECYCLE_STATE,
  ANN_LIFECYCLE_OBSERVED_GENERATION,
  ANN_LIFECYCLE_STATE_MESSAGE,
  ANN_VM_ID,
  ANN_IP,
  ANN_VNC_PORT,
]);

export class PodWorker {
  readonly uid: string;
  private latest: Pod;
  private readonly deps: WorkerDeps;
  private created = false;
  private vm: LiveVm | null = null;
  private lifecycle: { state: LifecycleState; generation: number; message: string } | null = null;
  private observedGeneration = 0;
  private macosHibernateRefused = false;
  /** vk evicted the pod (its VM is gone): nothing is left to save or destroy on the delete. */
  private evicted = false;
  private startTime = "";
  private fingerprint = "";
  private busy = false;
  private dirty = false;
  private finished = false;
  private attempts = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private loopDone: Promise<void> = Promise.resolve();

  constructor(pod: Pod, deps: WorkerDeps) {
    this.uid = pod.metadata.uid ?? "";
    this.latest = pod;
    this.deps = deps;
  }

  /** A new version of the pod from the watch; syncs when anything vk reads changed. */
  update(pod: Pod): void {
    this.latest = pod;
    const next = inputFingerprint(pod);
    if (next === this.fingerprint) return;
    this.fingerprint = next;
    this.kick();
  }

  /** Re-runs the sync now, resetting the retry backoff (a fault knob changed). */
  retryNow(): void {
    this.attempts = 0;
    this.kick();
  }

  /** The pod object is gone from the API: forget it, destroying any VM still tracked. */
  forget(): void {
    this.finished = true;
    clearTimeout(this.retryTimer);
    if (this.vm !== null) {
      this.journal("destroy", { vmID: this.vm.vmID, detail: "pod object deleted" });
      this.deps.node.vms.delete(this.vmName());
      const key = podKey(this.latest);
      if (this.deps.node.execTargets.get(key)?.vmID === this.vm.vmID) this.deps.node.execTargets.delete(key);
      this.vm = null;
    }
  }

  /** Stops retries and waits for an in-flight sync (aborted by the shared signal) to end. */
  async stop(): Promise<void> {
    this.finished = true;
    clearTimeout(this.retryTimer);
    await this.loopDone;
  }

  private kick(): void {
    if (this.finished) return;
    clearTimeout(this.retryTimer);
    if (this.busy) {
      this.dirty = true;
      return;
    }
    this.busy = true;
    this.loopDone = this.loop();
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.dirty = false;
        try {
          await this.sync();
          this.attempts = 0;
        } catch (err) {
          if (this.deps.signal.aborted || this.finished) return;
          await this.providerFailed(err as Error);
          this.scheduleRetry();
        }
      } while (this.dirty && !this.finished && !this.deps.signal.aborted);
    } finally {
      this.busy = false;
    }
  }

  private scheduleRetry(): void {
    if (this.attempts >= MAX_RETRIES) return;
    const delay = Math.min(200 * 1.5 ** this.attempts, 3000);
    this.attempts++;
    this.retryTimer = setTimeout(() => this.kick(), delay);
  }

  /** virtual-kubelet's handleProviderError: phase Pending (Failed for restartPolicy Never), reason ProviderFailed. */
  private async providerFailed(err: Error): Promise<void> {
    const pod = this.latest;
    if (pod.metadata.deletionTimestamp !== undefined) return;
    const phase = pod.spec.restartPolicy === "Never" ? "Failed" : "Pending";
    await this.deps.api
      .patchStatus(pod, { phase, reason: "ProviderFailed", message: err.message }, this.deps.signal)
      .catch(() => undefined);
    const reason = this.created ? "ProviderUpdateFailed" : "ProviderCreateFailed";
    await this.deps.api.event(pod, "Warning", reason, err.message);
  }

  private async sync(): Promise<void> {
    const pod = this.latest;
    if (pod.metadata.deletionTimestamp !== undefined) {
      await this.deletePod();
      return;
    }
    if (this.evicted) return;
    const eviction = this.vm === null ? undefined : this.deps.faults.takeEviction(this.vmName());
    if (eviction !== undefined) {
      await this.evict(eviction);
      return;
    }
    if (!this.created) await this.createPod();
    else await this.updatePod();
    await this.republishGeneration();
  }

  // ---- CreatePod ----

  private async createPod(): Promise<void> {
    const pod = this.latest;
    if (this.vmName() === "") {
      throw new ProviderError(`pod ${podKey(pod)} missing ${ANN_VM_NAME} annotation`);
    }
    this.checkCpuClass();
    if (this.startTime === "") {
      this.startTime = rfc3339(this.deps.clock.now());
      await this.deps.api.patchStatus(pod, { phase: "Pending", startTime: this.startTime }, this.deps.signal);
    }
    await this.writeLifecycle(LIFECYCLE_CREATING);
    if (!isManaged(pod)) {
      await this.adoptUnmanaged();
    } else {
      const bringUp = await this.resolveBringUp();
      await this.sleep(this.deps.timings.bootMs);
      const bootFailure = this.deps.faults.bootFailure(this.vmName());
      if (bootFailure !== undefined) throw await this.failOp("CreateBringUpFailed", bootFailure);
      if (bringUp.source === "restore" && this.deps.faults.wakeRefused(this.vmName())) {
        throw await this.failOp("WakeCloneFailed", `clone ${this.vmName()}: refused by simulator fault`);
      }
      const kind = bringUp.source === "restore" || bringUp.source === "fork" ? bringUp.source : "boot";
      await this.bringUp(kind, bringUp.source, bringUp.guest, bringUp.fromLocalCache, bringUp.origin);
    }
    this.created = true;
    await this.becomeReady();
  }

  private checkCpuClass(): void {
    const wanted = this.latest.spec.nodeSelector?.[LABEL_SNAPSHOT_CPU_CLASS] ?? "";
    const served = this.deps.node.cpuClass;
    if (wanted !== "" && wanted !== served) {
      throw new ProviderError(
        `pod ${podKey(this.latest)} requires snapshot cpu class "${wanted}" but node ${this.deps.node.name} serves "${served}"`,
      );
    }
  }

  private async adoptUnmanaged(): Promise<void> {
    const vmID = annotation(this.latest, ANN_VM_ID);
    const ip = annotation(this.latest, ANN_IP);
    if (vmID === "" || ip === "") {
      throw await this.failOp(
        "CreateBringUpFailed",
        `unmanaged vm ${this.vmName()} missing pre-assigned IP/VMID`,
      );
    }
    const now = this.deps.clock.now();
    this.track({ vmID, ip, startedAt: rfc3339(now), guest: Guest.firstBoot(this.vmName(), now) });
    this.journal("boot", { vmID, source: "adopt" });
    await this.publishRunning(false);
  }

  /**
   * The hibernate-evidence check and bring-up priority of a managed CreatePod: a restore-flagged pod
   * restores `:hibernate`; otherwise an existing `:hibernate` tag is restored (or refused next to an
   * explicit clone source) and an unreadable one refuses a fresh boot; then clone-from-dir, fork-from,
   * run mode and clone mode, in that order.
   */
  private async resolveBringUp(): Promise<{
    source: VmSource;
    /** The guest the VM comes up as (see Guest: a clone or restore is the same machine as its source). */
    guest: Guest;
    fromLocalCache?: boolean;
    origin?: SnapshotOrigin;
  }> {
    const pod = this.latest;
    const vm = this.vmName();
    const now = this.deps.clock.now();
    if (flag(pod, ANN_RESTORE_FROM_HIBERNATE)) {
      const restore = await this.pullHibernate("WakePullFailed");
      await this.checkSnapshotImage(restore.manifest, "WakePullFailed");
      await this.checkSnapshotBackend(restore.manifest, this.ref(TAG_HIBERNATE), "CreateBringUpFailed");
      return {
        source: "restore",
        guest: restore.guest,
        fromLocalCache: restore.fromLocalCache,
        origin: restore.origin,
      };
    }
    let evidence: FetchedManifest | null;
    try {
      evidence = await this.registryGet(TAG_HIBERNATE);
    } catch (err) {
      throw await this.failOp(
        "HibernateEvidenceUnavailable",
        `hibernate evidence for ${vm}: ${(err as Error).message} (refusing fresh boot)`,
      );
    }
    const forkFrom = annotation(pod, ANN_FORK_FROM);
    const cloneFromDir = annotation(pod, ANN_CLONE_FROM_DIR);
    if (evidence !== null) {
      if (forkFrom !== "" || cloneFromDir !== "") {
        throw await this.failOp(
          "HibernateEvidenceFailed",
          `vm ${vm} has a hibernate snapshot but the pod requests an explicit clone source; delete the hibernate tag to discard the hibernated state`,
        );
      }
      await this.checkSnapshotImage(evidence, "HibernateEvidenceFailed");
      await this.deps.api.event(
        pod,
        "Warning",
        "HibernateSnapshotExists",
        `restoring ${vm} from its hibernate snapshot`,
      );
      const restore = await this.pullHibernate("WakePullFailed");
      await this.checkSnapshotBackend(restore.manifest, this.ref(TAG_HIBERNATE), "CreateBringUpFailed");
      return {
        source: "restore",
        guest: restore.guest,
        fromLocalCache: restore.fromLocalCache,
        origin: restore.origin,
      };
    }
    const mode = annotation(pod, ANN_MODE);
    if (cloneFromDir !== "") {
      if (mode === "run" || forkFrom !== "") {
        throw await this.failOp(
          "CreateBringUpFailed",
          `vm ${vm}: clone-from-dir conflicts with mode run or fork-from`,
        );
      }
      return { source: "clone", guest: Guest.fromImage(cloneFromDir, now) };
    }
    if (forkFrom !== "") {
      const parent = this.deps.node.vms.get(forkFrom);
      if (parent === undefined) {
        throw await this.failOp(
          "CreateBringUpFailed",
          `fork ${vm} from ${forkFrom}: vm ${forkFrom} is not running on node ${this.deps.node.name}`,
        );
      }
      return { source: "fork", guest: Guest.resume(parent.guest.capture(now), now) };
    }
    if (mode === "run") return { source: "fresh", guest: Guest.firstBoot(vm, now) };
    await this.checkCloneSourceBackend();
    return { source: "clone", guest: Guest.fromImage(annotation(pod, ANN_IMAGE), now) };
  }

  /**
   * Clone mode reads the snapshot named by the image (`repo[:tag]`, tag latest) and refuses it when
   * another hypervisor took it (assertSnapshotBackend in provider/cocoon/create.go; the pod's
   * `vm.cocoonstack.io/backend`). A source the registry does not hold boots as before.
   */
  private async checkCloneSourceBackend(): Promise<void> {
    const image = annotation(this.latest, ANN_IMAGE);
    if (image === "") return;
    const colon = image.lastIndexOf(":");
    const [repo, tag] = colon > 0 ? [image.slice(0, colon), image.slice(colon + 1)] : [image, TAG_LATEST];
    let manifest: FetchedManifest | null;
    try {
      if (this.deps.faults.registryUnavailable()) throw new Error("registry unavailable (simulator fault)");
      manifest = await this.deps.oci.getManifest(this.deps.oci.repository(repo), tag);
    } catch (err) {
      throw await this.failOp("CreateBringUpFailed", `ensure snapshot ${image}: ${(err as Error).message}`);
    }
    if (manifest !== null) await this.checkSnapshotBackend(manifest, image, "CreateBringUpFailed", repo);
  }

  /**
   * A snapshot taken by one hypervisor never clones onto another: the pod's backend (when set) must
   * equal the config blob's hypervisor (assertSnapshotBackend in provider/cocoon/create.go; the
   * restore of a `:hibernate` tag goes through the same clone).
   */
  private async checkSnapshotBackend(
    manifest: FetchedManifest,
    source: string,
    reason: string,
    repoName = this.vmName(),
  ): Promise<void> {
    const wanted = annotation(this.latest, ANN_BACKEND);
    if (wanted === "") return;
    const taken = await readSnapshotHypervisor(
      this.deps.oci,
      this.deps.oci.repository(repoName),
      manifest.json,
    );
    if (taken === "" || taken === wanted) return;
    throw await this.failOp(
      reason,
      `clone vm ${this.vmName()} from ${source}: snapshot ${source} was taken with ${taken} but CocoonSet requests ${wanted}`,
    );
  }

  private async checkSnapshotImage(manifest: FetchedManifest, reason: string): Promise<void> {
    const recorded = manifest.json.annotations?.[MANIFEST_ANN_BASE_IMAGE] ?? "";
    const wanted = annotation(this.latest, ANN_IMAGE);
    if (recorded !== "" && recorded !== wanted) {
      throw await this.failOp(
        reason,
        `hibernate snapshot of vm ${this.vmName()} came from image "${recorded}" but the pod requests "${wanted}"; delete the hibernate tag to discard the hibernated state`,
      );
    }
  }

  // ---- UpdatePod ----

  private async updatePod(): Promise<void> {
    const pod = this.latest;
    this.checkCpuClass();
    if (this.vm !== null) {
      const failure = this.deps.faults.takeVmFailure(this.vmName());
      if (failure !== undefined) await this.failVM(failure);
    }
    if (flag(pod, ANN_HIBERNATE)) {
      if (this.vm === null || !isManaged(pod)) return;
      if (isMacOS(pod)) {
        this.macosHibernateRefused = true;
        throw await this.failOp(
          "HibernateUnsupported",
          `macOS guest ${this.vmName()} does not support hibernate`,
        );
      }
      await this.hibernate();
      return;
    }
    if (this.vm === null && isManaged(pod)) {
      await this.wake();
    } else if (this.vm !== null && this.macosHibernateRefused) {
      // Clearing the hibernate request lifts only the HibernateUnsupported failure.
      this.macosHibernateRefused = false;
      await this.writeLifecycle(LIFECYCLE_CREATING);
      await this.becomeReady();
    }
  }

  private async hibernate(): Promise<void> {
    const vm = this.vmName();
    const live = this.vm!;
    await this.writeLifecycle(LIFECYCLE_HIBERNATING);
    await this.sleep(this.deps.timings.hibernateMs);
    while (this.deps.faults.hibernateStalled(vm)) {
      // A delete arriving mid-stall abandons the hibernate; the VM is still live.
      if (this.latest.metadata.deletionTimestamp !== undefined) return;
      await this.sleep(STALL_POLL_MS);
    }
    let snapshotId: string;
    let digest: string;
    try {
      ({ snapshotId, digest } = await this.push(TAG_HIBERNATE, live.vmID));
    } catch (err) {
      throw await this.failOp(
        "HibernatePushFailed",
        `push ${vm}:${TAG_HIBERNATE}: ${(err as Error).message}`,
      );
    }
    this.keepLocalSnapshot(snapshotId, live.guest);
    await this.deps.api.patchAnnotations(
      this.latest,
      { [ANN_VM_ID]: null, [ANN_IP]: null },
      this.deps.signal,
    );
    if (this.deps.faults.removeFails(vm)) {
      // vk's only tag delete: roll the push back and give the VM its id/ip again.
      await this.deps.oci.deleteTag(this.deps.oci.repository(vm), TAG_HIBERNATE).catch(() => undefined);
      await this.deps.api.patchAnnotations(
        this.latest,
        { [ANN_VM_ID]: live.vmID, [ANN_IP]: live.ip },
        this.deps.signal,
      );
      throw await this.failOp("HibernateRemoveFailed", `remove vm ${vm}: refused by simulator fault`);
    }
    this.untrack();
    this.journal("hibernate", { vmID: live.vmID, detail: `pushed ${vm}:${TAG_HIBERNATE} ${digest}` });
    await this.writeLifecycle(LIFECYCLE_HIBERNATED);
    await this.deps.api.event(this.latest, "Normal", "Hibernated", "snapshot pushed to registry");
    await this.publishPending();
  }

  private async wake(): Promise<void> {
    const vm = this.vmName();
    await this.writeLifecycle(LIFECYCLE_CREATING);
    await this.deps.api.patchAnnotations(
      this.latest,
      { [ANN_VM_ID]: null, [ANN_IP]: null },
      this.deps.signal,
    );
    await this.sleep(this.deps.timings.wakeMs);
    const source = await this.pullHibernate("WakePullFailed");
    await this.checkSnapshotBackend(source.manifest, this.ref(TAG_HIBERNATE), "WakeCloneFailed");
    if (this.deps.faults.wakeRefused(vm)) {
      throw await this.failOp("WakeCloneFailed", `clone ${vm}: refused by simulator fault`);
    }
    await this.bringUp("wake", "restore", source.guest, source.fromLocalCache, source.origin);
    await this.deps.api.event(this.latest, "Normal", "Woken", `cloned from ${this.ref(TAG_HIBERNATE)}`);
    await this.becomeReady();
  }

  // ---- eviction ----

  /**
   * vk-cocoon's evictPod (provider/cocoon/provider.go, newest): the VM is gone, so vk DELETEs the pod
   * with a uid precondition and the pod's own grace period, stops tracking it, then notifies phase
   * Failed with the agent container terminated (exit code 1, the reason). No :latest push (nothing is
   * left to save); virtual-kubelet's final grace-0 delete follows once the deletion is seen.
   */
  private async evict(reason: EvictionReason): Promise<void> {
    const pod = this.latest;
    const live = this.vm!;
    const message = EVICTION_MESSAGES[reason];
    const deleted = await this.deps.api.evictDelete(pod, this.deps.signal);
    this.evicted = true;
    this.untrack();
    this.journal("evict", { vmID: live.vmID, detail: `${reason}: ${message}` });
    // A pod replaced under the same name is another incarnation: it is only dropped, never notified.
    if (!deleted) return;
    await this.deps.api
      .patchStatus(pod, evictedStatus(pod, reason, message, rfc3339(this.deps.clock.now())), this.deps.signal)
      .catch(() => undefined);
  }

  // ---- DeletePod ----

  private async deletePod(): Promise<void> {
    const pod = this.latest;
    if (this.evicted) {
      // The provider no longer tracks an evicted pod; only virtual-kubelet's final delete is left.
      await this.deps.api.finalDelete(pod, this.deps.signal);
      this.finished = true;
      return;
    }
    const vm = this.vmName();
    const keep = flag(pod, ANN_KEEP_SNAPSHOT_ON_DELETE);
    await this.sleep(this.deps.timings.deleteMs);
    if (this.vm !== null && isManaged(pod) && !isMacOS(pod) && shouldSnapshotVM(pod, roleForPod(pod, vm))) {
      // A failed save/push fails the delete and keeps the VM; the pod stays Terminating and is retried.
      const { snapshotId, digest } = await this.push(TAG_LATEST, this.vm.vmID);
      this.keepLocalSnapshot(snapshotId, this.vm.guest);
      this.journal("push-latest", { vmID: this.vm.vmID, detail: `pushed ${vm}:${TAG_LATEST} ${digest}` });
    }
    if (vm !== "" && this.created) {
      const hadLocalSnapshot = this.deps.node.snapshots.has(vm);
      if (!keep || !isManaged(pod)) this.deps.node.snapshots.delete(vm);
      this.journal("destroy", {
        vmID: this.vm?.vmID ?? "",
        keptLocalSnapshot: keep && hadLocalSnapshot,
        detail: this.vm === null ? "no live VM (hibernated)" : "pod deleted",
      });
      this.untrack();
    }
    await this.deps.api
      .patchStatus(pod, succeededStatus(pod, rfc3339(this.deps.clock.now())), this.deps.signal)
      .catch(() => undefined);
    await this.deps.api.finalDelete(pod, this.deps.signal);
    this.finished = true;
  }

  // ---- shared steps ----

  /** Mints a VM ID and IP, patches them, journals the start and publishes Running (not ready). */
  private async bringUp(
    kind: "boot" | "restore" | "fork" | "wake",
    source: VmSource,
    guest: Guest,
    fromLocalCache?: boolean,
    snapshot?: SnapshotOrigin,
  ): Promise<void> {
    const live = {
      vmID: randomUUID(),
      ip: this.deps.nextIP(),
      startedAt: rfc3339(this.deps.clock.now()),
      guest,
    };
    this.track(live);
    await this.deps.api.patchAnnotations(
      this.latest,
      { [ANN_VM_ID]: live.vmID, [ANN_IP]: live.ip },
      this.deps.signal,
    );
    this.journal(kind, {
      vmID: live.vmID,
      source,
      ...(fromLocalCache === undefined ? {} : { fromLocalCache }),
      ...(snapshot === undefined ? {} : { snapshot }),
    });
    await this.publishRunning(false);
  }

  /** After the probe delay: status Ready first, then lifecycle ready (unless a failure is pending). */
  private async becomeReady(): Promise<void> {
    const failure = this.deps.faults.takeVmFailure(this.vmName());
    if (failure !== undefined) {
      await this.failVM(failure);
      return;
    }
    await this.sleep(this.deps.timings.readyMs);
    if (this.lifecycle?.state === LIFECYCLE_FAILED) return;
    await this.publishRunning(true);
    await this.writeLifecycle(LIFECYCLE_READY);
  }

  /** The failVM knob: the VM is unhealthy, lifecycle failed, pod Running and not Ready; not an op error. */
  private async failVM(message: string): Promise<void> {
    this.journal("refuse", { vmID: this.vm?.vmID ?? "", detail: message });
    await this.publishRunning(false);
    await this.writeLifecycle(LIFECYCLE_FAILED, message);
  }

  /** vk's failOp: Warning event, lifecycle failed@G with the message; the caller throws the result. */
  private async failOp(reason: string, message: string): Promise<ProviderError> {
    this.journal("refuse", { vmID: this.vm?.vmID ?? "", detail: `${reason}: ${message}` });
    await this.deps.api.event(this.latest, "Warning", reason, message);
    await this.writeLifecycle(LIFECYCLE_FAILED, message);
    return new ProviderError(message);
  }

  /** The triple in ONE patch; observed generation never decreases; ready never replaces failed at the same G. */
  private async writeLifecycle(state: LifecycleState, message = ""): Promise<void> {
    const generation = Math.max(podGeneration(this.latest), this.observedGeneration);
    const current = this.lifecycle;
    if (state === LIFECYCLE_READY && current?.state === LIFECYCLE_FAILED && current.generation === generation)
      return;
    this.lifecycle = { state, generation, message: truncateMessage(message) };
    this.observedGeneration = generation;
    await this.deps.api.patchAnnotations(
      this.latest,
      {
        [ANN_LIFECYCLE_STATE]: state,
        [ANN_LIFECYCLE_OBSERVED_GENERATION]: String(generation),
        [ANN_LIFECYCLE_STATE_MESSAGE]: message === "" ? null : this.lifecycle.message,
      },
      this.deps.signal,
    );
  }

  /** A generation bump with no transition re-publishes the current state at the new generation. */
  private async republishGeneration(): Promise<void> {
    const current = this.lifecycle;
    if (current === null || podGeneration(this.latest) <= current.generation) return;
    await this.writeLifecycle(current.state, current.message);
  }

  /** The :hibernate source of a wake or restore: the tag must exist; a matching local snapshot skips the pull. */
  private async pullHibernate(
    reason: string,
  ): Promise<{ manifest: FetchedManifest; fromLocalCache: boolean; origin: SnapshotOrigin; guest: Guest }> {
    const vm = this.vmName();
    const ref = this.ref(TAG_HIBERNATE);
    try {
      const manifest = await this.registryGet(TAG_HIBERNATE);
      if (manifest === null) throw new Error("manifest not found");
      const snapshotId = await readSnapshotId(this.deps.oci, this.deps.oci.repository(vm), manifest.json);
      const cached = this.deps.node.snapshots.get(vm);
      if (cached !== undefined && cached !== snapshotId) this.deps.node.snapshots.delete(vm);
      const fromLocalCache = cached === snapshotId;
      const repo = this.deps.oci.repository(vm);
      const pulled = await resolveSnapshotOrigin(
        this.deps.oci,
        repo,
        TAG_HIBERNATE,
        manifest,
        fromLocalCache,
      );
      const now = this.deps.clock.now();
      // The snapshot's guest resumes; one pushed without guest state (by a test) boots as a first boot.
      const state = fromLocalCache ? this.deps.node.snapshotGuests.get(snapshotId) : pulled.guest;
      const guest = state === undefined ? Guest.firstBoot(vm, now) : Guest.resume(state, now);
      return { manifest, fromLocalCache, origin: pulled.origin, guest };
    } catch (err) {
      if (err instanceof ProviderError) throw err;
      throw await this.failOp(reason, `pull ${ref}: ${(err as Error).message}`);
    }
  }

  private async registryGet(tag: string): Promise<FetchedManifest | null> {
    if (this.deps.faults.registryUnavailable()) throw new Error("registry unavailable (simulator fault)");
    return this.deps.oci.getManifest(this.deps.oci.repository(this.vmName()), tag);
  }

  private async push(tag: string, vmID: string): Promise<{ snapshotId: string; digest: string }> {
    const vm = this.vmName();
    if (this.deps.faults.registryUnavailable()) throw new Error("registry unavailable (simulator fault)");
    if (this.deps.faults.pushFails(vm)) throw new Error("push refused by simulator fault");
    return pushSnapshot(this.deps.oci, {
      vmName: vm,
      vmID,
      tag,
      baseImage: annotation(this.latest, ANN_IMAGE),
      fromNode: this.deps.node.name,
      hypervisor: annotation(this.latest, ANN_BACKEND) || DEFAULT_HYPERVISOR,
      ...(this.vm === null ? {} : { guest: this.vm.guest.capture(this.deps.clock.now()) }),
    });
  }

  /** The node-local snapshot (the warm-wake cache) and the guest state it holds. */
  private keepLocalSnapshot(snapshotId: string, guest: Guest): void {
    const vm = this.vmName();
    const previous = this.deps.node.snapshots.get(vm);
    if (previous !== undefined) this.deps.node.snapshotGuests.delete(previous);
    this.deps.node.snapshots.set(vm, snapshotId);
    this.deps.node.snapshotGuests.set(snapshotId, guest.capture(this.deps.clock.now()));
  }

  private async publishRunning(ready: boolean): Promise<void> {
    if (this.vm === null) return;
    const status = runningStatus(this.latest, {
      vmIP: this.vm.ip,
      startedAt: this.vm.startedAt,
      hostIP: this.deps.node.internalIP,
      startTime: this.startTime,
      ready,
      now: rfc3339(this.deps.clock.now()),
    });
    await this.deps.api.patchStatus(this.latest, status, this.deps.signal);
  }

  private async publishPending(): Promise<void> {
    await this.deps.api.patchStatus(this.latest, pendingStatus(this.startTime), this.deps.signal);
  }

  private track(live: LiveVm): void {
    this.vm = live;
    this.deps.node.vms.set(this.vmName(), { vmID: live.vmID, guest: live.guest });
    this.deps.node.execTargets.set(podKey(this.latest), {
      vmName: this.vmName(),
      vmID: live.vmID,
      podUID: this.uid,
      ip: live.ip,
      guest: live.guest,
      windows: annotation(this.latest, ANN_OS) === "windows",
    });
  }

  private untrack(): void {
    if (this.vm !== null && this.deps.node.vms.get(this.vmName())?.vmID === this.vm.vmID) {
      this.deps.node.vms.delete(this.vmName());
    }
    const key = podKey(this.latest);
    if (this.vm !== null && this.deps.node.execTargets.get(key)?.vmID === this.vm.vmID) {
      this.deps.node.execTargets.delete(key);
    }
    this.vm = null;
  }

  private journal(kind: VmEvent["kind"], fields: Partial<VmEvent> & { vmID: string }): void {
    const pod = this.latest;
    this.deps.record.append({
      time: this.deps.clock.now(),
      kind,
      vmName: this.vmName(),
      namespace: pod.metadata.namespace ?? "",
      podName: pod.metadata.name ?? "",
      podUID: this.uid,
      node: this.deps.node.name,
      ...fields,
    });
  }

  private vmName(): string {
    return annotation(this.latest, ANN_VM_NAME);
  }

  private ref(tag: string): string {
    return `${this.deps.oci.repository(this.vmName())}:${tag}`;
  }

  private sleep(ms: number): Promise<void> {
    return this.deps.clock.sleep(ms, this.deps.signal);
  }
}

/** What vk reacts to: annotations other than its own write-backs, deletion and the node selector. */
function inputFingerprint(pod: Pod): string {
  const inputs = Object.entries(pod.metadata.annotations ?? {})
    .filter(([k]) => !VK_WRITTEN.has(k))
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return JSON.stringify([inputs, pod.metadata.deletionTimestamp ?? "", pod.spec.nodeSelector ?? {}]);
}
