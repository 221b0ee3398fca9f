// Fault-injection knobs. Tests flip them; the simulator's pod workers read them at each step.
// Every change re-queues the pods so a knob turned off lets a refused operation retry promptly.

const ANY = "*";

/** The container-terminated reasons of vk-cocoon's evictions (provider/cocoon/provider.go). */
export type EvictionReason = "VMGone" | "RestartCooldown" | "RestartFailed" | "VMInspectTimeout";

export class Faults {
  private readonly stalledHibernates = new Set<string>();
  private readonly refusedWakes = new Set<string>();
  private readonly failedPushes = new Set<string>();
  private readonly failedRemoves = new Set<string>();
  private readonly failedBoots = new Map<string, string>();
  private readonly pendingVmFailures = new Map<string, string>();
  private readonly pendingEvictions = new Map<string, EvictionReason>();
  private readonly hungExecs = new Set<string>();
  private readonly failedSshHandshakes = new Set<string>();
  private readonly silentGuests = new Set<string>();
  private registryIsDown = false;
  private newPodSightDelayMs = 0;
  private listener: (vmName: string | null) => void = () => {};

  /**
   * Marks the VM failed the way an eviction, post-clone exhaustion or IP-wait timeout would:
   * lifecycle `failed` with this message, the pod stays Running and not Ready. Applies to the live
   * VM now, or to the next bring-up of that VM name when none is live. One-shot.
   */
  failVM(vmName: string, message: string): void {
    this.pendingVmFailures.set(vmName, message);
    this.listener(vmName);
  }

  /**
   * vk-cocoon evicts the live VM of this name: the VM is gone (crashed, removed behind vk's back, or a
   * restart failed), so vk deletes the pod and reports it Failed with this terminated reason
   * (`handleVMGone` / `evictPod` in vk-cocoon's provider/cocoon/provider.go).
   * Applies to the live VM now, or to the next one of that name. One-shot.
   */
  evict(vmName: string, reason: EvictionReason = "VMGone"): void {
    this.pendingEvictions.set(vmName, reason);
    this.listener(vmName);
  }

  /** Bring-up of this VM fails (CreateBringUpFailed) on every attempt while set; null clears. */
  failBoot(vmName: string, message: string | null): void {
    if (message === null) this.failedBoots.delete(vmName);
    else this.failedBoots.set(vmName, message);
    this.listener(vmName);
  }

  /** Hibernates of this VM (or every VM with "*") stop after `hibernating` until turned off. */
  stallHibernate(vmName: string, on: boolean): void {
    toggle(this.stalledHibernates, vmName, on);
    this.listener(null);
  }

  /** Wakes and restores of this VM fail (WakeCloneFailed) while on. */
  refuseWake(vmName: string, on: boolean): void {
    toggle(this.refusedWakes, vmName, on);
    this.listener(vmName);
  }

  /** Every registry call the simulator makes fails while on (the registry itself stays up for others). */
  registryDown(on: boolean): void {
    this.registryIsDown = on;
    this.listener(null);
  }

  /** Snapshot pushes (:hibernate and :latest) of this VM fail while on. */
  failPush(vmName: string, on: boolean): void {
    toggle(this.failedPushes, vmName, on);
    this.listener(vmName);
  }

  /** Removing this VM after its :hibernate push fails while on, so vk rolls the tag back. */
  failRemove(vmName: string, on: boolean): void {
    toggle(this.failedRemoves, vmName, on);
    this.listener(vmName);
  }

  /**
   * vk-cocoon first sees each new pod this long after its first event, and at the version it has by
   * then, as when the scheduler binds a pod late: virtual-kubelet watches only pods bound to its node
   * (spec.nodeName), so every change made before the bind reaches it folded into the one CreatePod,
   * and vk-cocoon honours the hibernate annotation in UpdatePod only (vk-cocoon.md, "UpdatePod").
   * 0 turns it off.
   */
  seeNewPodsLate(ms: number): void {
    this.newPodSightDelayMs = ms;
  }

  /**
   * Every command run in this VM's guest (or every guest with "*") hangs while on: the SSH session
   * stays open, and ends only when the exec's client goes away (virtual-kubelet then cancels
   * RunInContainer's context, which closes the session: vk-cocoon's guest/ssh/ssh.go).
   */
  hangExec(vmName: string, on: boolean): void {
    toggle(this.hungExecs, vmName, on);
  }

  /** The SSH handshake with this VM's guest fails while on, so every exec fails before running. */
  failSshHandshake(vmName: string, on: boolean): void {
    toggle(this.failedSshHandshakes, vmName, on);
  }

  /**
   * This VM's guest does not answer SSH while on: an exec waits out vk-cocoon's dial timeout
   * (SimTimings.sshDialTimeoutMs; upstream 10 s) and fails with an i/o timeout.
   */
  silenceGuest(vmName: string, on: boolean): void {
    toggle(this.silentGuests, vmName, on);
  }

  // ---- read side, used by the simulator ----

  execHangs(vmName: string): boolean {
    return this.hungExecs.has(ANY) || this.hungExecs.has(vmName);
  }

  sshHandshakeFails(vmName: string): boolean {
    return this.failedSshHandshakes.has(ANY) || this.failedSshHandshakes.has(vmName);
  }

  guestSilent(vmName: string): boolean {
    return this.silentGuests.has(ANY) || this.silentGuests.has(vmName);
  }

  newPodSightDelay(): number {
    return this.newPodSightDelayMs;
  }

  onChange(listener: (vmName: string | null) => void): void {
    this.listener = listener;
  }

  takeVmFailure(vmName: string): string | undefined {
    const message = this.pendingVmFailures.get(vmName);
    this.pendingVmFailures.delete(vmName);
    return message;
  }

  takeEviction(vmName: string): EvictionReason | undefined {
    const reason = this.pendingEvictions.get(vmName);
    this.pendingEvictions.delete(vmName);
    return reason;
  }

  bootFailure(vmName: string): string | undefined {
    return this.failedBoots.get(vmName);
  }

  hibernateStalled(vmName: string): boolean {
    return this.stalledHibernates.has(ANY) || this.stalledHibernates.has(vmName);
  }

  wakeRefused(vmName: string): boolean {
    return this.refusedWakes.has(vmName);
  }

  registryUnavailable(): boolean {
    return this.registryIsDown;
  }

  pushFails(vmName: string): boolean {
    return this.failedPushes.has(vmName);
  }

  removeFails(vmName: string): boolean {
    return this.failedRemoves.has(vmName);
  }
}

function toggle(set: Set<string>, key: string, on: boolean): void {
  if (on) set.add(key);
  else set.delete(key);
}
