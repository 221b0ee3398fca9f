// Guest hooks' decisions, free of I/O: which pods hooks apply to, what a new VM owes (by where its
// state came from), whether a member is held back from Ready, whether a VM may hibernate yet, and the
// built-in refresh's guest commands.

import type { Pod } from "../apis/core.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import {
  type CocoonGuestPolicy,
  DEFAULT_HOOK_BACKOFF_SECONDS,
  DEFAULT_HOOK_TIMEOUT_SECONDS,
  type FailurePolicy,
  type GuestHook,
  type HookPoint,
  type READ_OWNER_STEP,
  REFRESH_STEP,
  type WRITE_OWNER_STEP,
} from "../apis/v1alpha1/types.ts";
import { ANN_MANAGED, ANN_OS, ANN_VM_ID, TRUE } from "../contract/keys.ts";
import { isPodReady, readHibernateState } from "../contract/pod.ts";
import type { HeldMember, HibernateVerdict } from "../guestgate.ts";
import { LABEL_CLAIM } from "../pool/keys.ts";
import { parseRFC3339 } from "../rfc3339.ts";
import {
  ANN_GUEST_POLICY,
  FAILED_HOOK_RETRY_MS,
  GUEST_OWNER_FILE,
  REASON_HOOK_FAILED,
  REASON_HOOKS_PENDING,
  REASON_POLICY_NOT_FOUND,
} from "./keys.ts";
import { type GuestHooksRecord, type Origin, type PhaseRecord, readGuestHooksRecord } from "./record.ts";

/** The policy a set names, "" for none. */
export function guestPolicyName(cs: CocoonSet): string {
  return cs.metadata.annotations?.[ANN_GUEST_POLICY] ?? "";
}

/**
 * Hooks act in managed Linux guests only: an unmanaged (static) VM has no guest work by vk-cocoon's
 * contract, a Windows guest answers every exec with "not supported" and success, and macOS and
 * Android guests have no shell over SSH to run them.
 */
export function hookable(pod: Pod): boolean {
  const os = pod.metadata.annotations?.[ANN_OS] ?? "";
  return pod.metadata.annotations?.[ANN_MANAGED] === TRUE && (os === "" || os === "linux");
}

/** The VM the pod runs now, "" when none: vk-cocoon gives every boot, clone, restore and wake a new ID. */
export function vmIDOf(pod: Pod): string {
  return pod.metadata.annotations?.[ANN_VM_ID] ?? "";
}

/** A VM that runs and answers: post hooks run on it only then (vk-cocoon's Ready needs its probe). */
export function runsReady(pod: Pod): boolean {
  return vmIDOf(pod) !== "" && isPodReady(pod) && !readHibernateState(pod) && !pod.metadata.deletionTimestamp;
}

/** What a guest's owner mark says when the state is this VM's own. */
export function ownerMark(vmName: string, setUID: string): string {
  return `${vmName}@${setUID}`;
}

/** A guest whose mark is its own VM's resumed its own state; any other mark, or none, is a copy. */
export function originFromMark(mark: string, own: string): Origin {
  return mark.trim() === own ? "wake" : "clone";
}

/** The command that prints the owner mark, or nothing (never an error) when the guest has none. */
export const READ_OWNER_COMMAND = ["sh", "-c", `cat ${GUEST_OWNER_FILE} 2>/dev/null || true`];
/** The command that writes the owner mark from its stdin. */
export const WRITE_OWNER_COMMAND = [
  "sh",
  "-c",
  `mkdir -p ${GUEST_OWNER_FILE.slice(0, GUEST_OWNER_FILE.lastIndexOf("/"))} && cat > ${GUEST_OWNER_FILE}`,
];

/** Bytes of the operator's randomness written into the guest's pool by a refresh. */
export const REFRESH_ENTROPY_BYTES = 64;

/** The pod's name as a hostname: cut to 63 characters (the kernel's limit), no trailing '-' or '.'. */
export function hostnameFor(podName: string): string {
  return podName.slice(0, 63).replace(/[-.]+$/, "");
}

/**
 * The built-in refresh, one shell line whose stdin is fresh randomness. First the clock is set from
 * the operator's and the randomness mixed into the kernel's pool; then, after a clone, a new
 * machine-id, hostname = the pod's name and new SSH host keys. The order matters: copies of one guest
 * share its random state, so identities generated before the mix would come out the same in every copy.
 */
export function refreshCommand(origin: Origin, podName: string, nowMs: number): string[] {
  const fresh = [`date -s @${Math.floor(nowMs / 1000)}`, "cat > /dev/urandom"];
  const identity = [
    "rm -f /etc/machine-id",
    "systemd-machine-id-setup",
    `hostnamectl set-hostname ${hostnameFor(podName)}`,
    "rm -f /etc/ssh/ssh_host_*",
    "ssh-keygen -A",
  ];
  return ["sh", "-c", [...fresh, ...(origin === "clone" ? identity : [])].join(" && ")];
}

/** One hook as it runs: the policy's fields with their defaults. */
export interface HookRun {
  name: string;
  point: HookPoint;
  command: string[];
  timeoutMs: number;
  failurePolicy: FailurePolicy;
  retries: number;
  backoffMs: number;
}

/** The owner mark's read and write: small, Fail, retried twice a second apart. */
export function ownerStepRun(
  name: typeof READ_OWNER_STEP | typeof WRITE_OWNER_STEP,
  command: string[],
  point: HookPoint,
): HookRun {
  return { name, point, command, timeoutMs: 30_000, failurePolicy: "Fail", retries: 2, backoffMs: 1_000 };
}

/** The built-in refresh's own limits: Fail (a clone keeping its source's identity is not Ready), 60 s. */
const REFRESH_TIMEOUT_MS = 60_000;
const REFRESH_RETRIES = 2;

function hookRun(hook: GuestHook, point: HookPoint): HookRun {
  return {
    name: hook.name,
    point,
    command: hook.exec.command,
    timeoutMs: (hook.timeoutSeconds ?? DEFAULT_HOOK_TIMEOUT_SECONDS) * 1000,
    failurePolicy: hook.failurePolicy ?? "Fail",
    retries: hook.retries ?? 0,
    backoffMs: (hook.backoffSeconds ?? DEFAULT_HOOK_BACKOFF_SECONDS) * 1000,
  };
}

/** The post point of an origin. */
export function postPoint(origin: Origin): HookPoint {
  return origin === "clone" ? "PostClone" : "PostWake";
}

function refreshes(policy: CocoonGuestPolicy, origin: Origin): boolean {
  return (origin === "clone" ? policy.spec.refresh?.afterClone : policy.spec.refresh?.afterWake) === true;
}

/** The policy's hooks at `point`, in the policy's order. */
export function hooksAt(policy: CocoonGuestPolicy, point: HookPoint): HookRun[] {
  return (policy.spec.hooks ?? []).filter((h) => h.on.includes(point)).map((h) => hookRun(h, point));
}

/**
 * What a VM of `origin` runs once it is Ready: the built-in refresh first (when the policy asks), its
 * command filled in later, then the policy's hooks of that point.
 */
export function postRuns(policy: CocoonGuestPolicy, origin: Origin): HookRun[] {
  const point = postPoint(origin);
  const refresh: HookRun[] = refreshes(policy, origin)
    ? [
        {
          name: REFRESH_STEP,
          point,
          command: [],
          timeoutMs: REFRESH_TIMEOUT_MS,
          failurePolicy: "Fail",
          retries: REFRESH_RETRIES,
          backoffMs: DEFAULT_HOOK_BACKOFF_SECONDS * 1000,
        },
      ]
    : [];
  return [...refresh, ...hooksAt(policy, point)];
}

/** Whether the policy has anything to run after a clone or a wake (else no post phase, no exec). */
export function hasPostWork(policy: CocoonGuestPolicy): boolean {
  return postRuns(policy, "clone").length > 0 || postRuns(policy, "wake").length > 0;
}

const gates = (runs: readonly HookRun[]): boolean => runs.some((r) => r.failurePolicy === "Fail");

/** Whether a Fail hook (or the refresh) is owed after a VM of `origin`; unknown origin: after either. */
function postGates(policy: CocoonGuestPolicy, origin: Origin | undefined): boolean {
  return origin
    ? gates(postRuns(policy, origin))
    : gates(postRuns(policy, "clone")) || gates(postRuns(policy, "wake"));
}

/**
 * A change of a set that changes what its hooks hold: the policy it names, or (naming one) the claim
 * that bound it. Such a change is no new generation, so the set's watch lets it pass on this.
 */
export function guestInputsChanged(oldSet: CocoonSet, newSet: CocoonSet): boolean {
  if (guestPolicyName(oldSet) !== guestPolicyName(newSet)) return true;
  return guestPolicyName(newSet) !== "" && claimOf(oldSet) !== claimOf(newSet);
}

/** The claim that bound the set, "" for none. */
export function claimOf(cs: CocoonSet): string {
  return cs.metadata.labels?.[LABEL_CLAIM] ?? "";
}

/** The record of the VM the pod runs now: an earlier VM's record is none. */
export function currentRecord(record: GuestHooksRecord, vmID: string): GuestHooksRecord {
  return record.vmID === vmID ? record : { vmID };
}

/** A failed phase runs again once the policy was edited or FAILED_HOOK_RETRY_MS has passed; when, else. */
export function retryAt(phase: PhaseRecord, policy: CocoonGuestPolicy): number {
  if (phase.policyGeneration !== (policy.metadata.generation ?? 0)) return Number.NEGATIVE_INFINITY;
  return (parseRFC3339(phase.at) ?? 0) + FAILED_HOOK_RETRY_MS;
}

/** A phase that has not run, or failed and is due again. */
function due(phase: PhaseRecord | undefined, policy: CocoonGuestPolicy, nowMs: number): boolean {
  return phase === undefined || (phase.result === "Failed" && retryAt(phase, policy) <= nowMs);
}

export type Work = "post" | "claim" | "preHibernate";

/**
 * The next phase the pod's VM owes, in the order they run: post before claim (a claimed member is
 * refreshed first), and a requested pre-hibernate last. Undefined: nothing is due now.
 */
export function dueWork(
  pod: Pod,
  cs: CocoonSet,
  policy: CocoonGuestPolicy,
  record: GuestHooksRecord,
  preHibernateRequested: boolean,
  nowMs: number,
): Work | undefined {
  if (!hookable(pod) || vmIDOf(pod) === "" || vmIDOf(pod) !== record.vmID) return undefined;
  const ready = runsReady(pod);
  if (ready && hasPostWork(policy) && due(record.post, policy, nowMs)) return "post";
  const claim = claimOf(cs);
  const postDone = record.post?.result === "Succeeded" || !hasPostWork(policy);
  if (ready && postDone && claim !== "" && hooksAt(policy, "PostClaim").length > 0) {
    const done = record.claim?.name === claim ? record.claim : undefined;
    if (due(done, policy, nowMs)) return "claim";
  }
  if (
    preHibernateRequested &&
    hooksAt(policy, "PreHibernate").length > 0 &&
    due(record.preHibernate, policy, nowMs)
  )
    return "preHibernate";
  return undefined;
}

/** The first failed phase's retry time, to requeue for; undefined when none waits. */
export function nextRetry(record: GuestHooksRecord, policy: CocoonGuestPolicy): number | undefined {
  const times = [record.post, record.claim, record.preHibernate]
    .filter((p): p is PhaseRecord => p?.result === "Failed")
    .map((p) => retryAt(p, policy));
  return times.length > 0 ? Math.min(...times) : undefined;
}

const failedMessage = (pod: Pod, what: string, phase: PhaseRecord): string =>
  `${what} hook ${phase.hook ?? ""} failed on pod ${pod.metadata.name}: ${phase.message ?? ""}`.trim();

/**
 * Whether a Ready pod is held back by its hooks: a Fail hook (or the refresh) owed after its clone or
 * wake, or after `claim` (default: the claim the set's label names) bound its set, has not succeeded yet. `policy` null: the set names one that does
 * not exist, which holds every member (a misspelt name must not pass for "no hooks").
 */
export function memberGate(
  pod: Pod,
  cs: CocoonSet,
  policy: CocoonGuestPolicy | null,
  claim: string = claimOf(cs),
): HeldMember | undefined {
  if (!hookable(pod) || !isPodReady(pod)) return undefined;
  if (policy === null) {
    return {
      reason: REASON_POLICY_NOT_FOUND,
      message: `CocoonGuestPolicy ${guestPolicyName(cs)} not found in namespace ${cs.metadata.namespace}`,
    };
  }
  const record = currentRecord(readGuestHooksRecord(pod), vmIDOf(pod));
  if (postGates(policy, record.origin)) {
    if (record.post?.result === "Failed")
      return {
        reason: REASON_HOOK_FAILED,
        message: failedMessage(pod, postPoint(record.origin ?? "clone"), record.post),
      };
    if (record.post?.result !== "Succeeded")
      return {
        reason: REASON_HOOKS_PENDING,
        message: `post-clone and post-wake hooks have not run on pod ${pod.metadata.name}`,
      };
  }
  if (claim !== "" && gates(hooksAt(policy, "PostClaim"))) {
    const done = record.claim?.name === claim ? record.claim : undefined;
    if (done?.result === "Failed")
      return { reason: REASON_HOOK_FAILED, message: failedMessage(pod, "PostClaim", done) };
    if (done?.result !== "Succeeded")
      return {
        reason: REASON_HOOKS_PENDING,
        message: `PostClaim hooks for claim ${claim} have not run on pod ${pod.metadata.name}`,
      };
  }
  return undefined;
}

/**
 * Whether `pod` may be annotated to hibernate. A VM that does not run has nothing to quiesce; one that
 * runs, Ready or not, is asked (a guest that does not answer fails the hook); a VM
 * whose pre-hibernate phase succeeded (Ignore failures included) goes; a failed one is refused until
 * it is due again; otherwise the hook is owed ("run": the caller queues it and waits).
 */
export function preHibernateVerdict(
  pod: Pod,
  policy: CocoonGuestPolicy | null,
  nowMs: number,
): HibernateVerdict | { action: "run" } {
  if (policy === null || !hookable(pod) || vmIDOf(pod) === "" || hooksAt(policy, "PreHibernate").length === 0)
    return { action: "proceed" };
  const phase = currentRecord(readGuestHooksRecord(pod), vmIDOf(pod)).preHibernate;
  if (phase?.result === "Succeeded") return { action: "proceed" };
  if (phase?.result === "Failed") {
    const at = retryAt(phase, policy);
    if (at > nowMs)
      return {
        action: "refused",
        message: failedMessage(pod, "PreHibernate", phase),
        retryAfterMs: at - nowMs,
      };
  }
  return { action: "run" };
}
