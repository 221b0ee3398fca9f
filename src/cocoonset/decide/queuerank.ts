// The rank a set's pass waits in the CocoonSet queue by: lowest first, and not before it (epoch ms).
// A pass that moves a set on (creates its pods, completes a boot, a wake or a suspend, answers a spec
// edit, a delete or a due idle or expiry deadline) ranks by the set's creation time, so under a burst
// the sets that came first reach Running one after another instead of every set moving one pass a
// round. A pass that only observes (a pod on its way up, a settled set's event) ranks a second after
// it was queued: the events of a set are then taken by one pass, not one each. A set coming up waits
// longer, up to the spec's five-second poll: the event that completes its boot (the main Ready, every
// member Ready) or a failure moves the pass forward, and a pass before it would only report progress,
// one status write and one more pass each.

import type { Pod } from "../../apis/core.ts";
import type { CocoonSet } from "../../apis/v1/types.ts";
import {
  FINALIZER_COCOONSET,
  LABEL_ROLE,
  ROLE_MAIN,
  ROLE_SUB_AGENT,
  ROLE_TOOLBOX,
} from "../../contract/keys.ts";
import { isPodFailed, isPodReady, isVMLive } from "../../contract/pod.ts";
import { REQUEUE_POLL_MS } from "../../pass/pass.ts";

/**
 * Whether the set's next pass moves it on, from the cached set and its pods only. `awaitingCreates`:
 * pods this process created that the cache does not show yet; their add events wake the set.
 */
export function passMovesSetOn(
  cs: CocoonSet,
  pods: readonly Pod[],
  nowMs: number,
  awaitingCreates = false,
): boolean {
  if (cs.metadata.deletionTimestamp) return true;
  // An idle or expiry deadline the status announced has come: the pass suspends or expires the set.
  const due = (at: string | undefined) => at !== undefined && Date.parse(at) <= nowMs;
  if ((!cs.spec.suspend && due(cs.status?.idleSuspendAt)) || due(cs.status?.expireAt)) return true;
  if (!(cs.metadata.finalizers ?? []).includes(FINALIZER_COCOONSET)) return true;
  // A spec edit of a set that has a status; a new set's first passes are judged by its pods, so the
  // pass its own creates bring does not run before the pods it waits on could be up.
  const observed = cs.status?.observedGeneration;
  if (observed !== undefined && observed !== (cs.metadata.generation ?? 0)) return true;
  const phase = cs.status?.phase;
  if (cs.spec.suspend) return phase !== "Suspended";
  // A pass before the created pods show would find them missing and wait for them.
  if (awaitingCreates) return false;
  const live = pods.filter((pod) => !pod.metadata.deletionTimestamp);
  // A failed member is steps 7 and 11-13's to report or rebuild at once.
  if (phase !== "Failed" && live.some(isPodFailed)) return true;
  const withRole = (role: string) => live.filter((pod) => pod.metadata.labels?.[LABEL_ROLE] === role);
  const main = withRole(ROLE_MAIN)[0];
  if (!main) return true;
  if (phase === "Waking") return isVMLive(main);
  if (!isPodReady(main)) return false;
  const subAgents = withRole(ROLE_SUB_AGENT);
  const toolboxes = withRole(ROLE_TOOLBOX);
  if (subAgents.length < (cs.spec.agent.replicas ?? 0) || toolboxes.length < (cs.spec.toolboxes?.length ?? 0))
    return true;
  const ready = live.filter(isPodReady).length;
  return ready === live.length && (phase !== "Running" || cs.status?.readyAgents !== subAgents.length + 1);
}

/** How long an observing pass waits, so the events it answers come together. */
export const OBSERVING_PASS_DELAY_MS = 1_000;

/**
 * How long an observing pass of a set coming up waits: the poll step 11 asks for while the main is
 * not Ready, so no pass runs later than the spec's poll would have.
 */
export const COMING_UP_PASS_DELAY_MS = REQUEUE_POLL_MS;

/** Not suspended and not yet Running: its observing passes would only report its boot's progress. */
function comingUp(cs: CocoonSet): boolean {
  return !cs.spec.suspend && cs.status?.phase !== "Running";
}

/**
 * The queue rank: creation time for a pass that moves the set on (no later than now, whatever the
 * API server's clock says), else now plus the observing delay (COMING_UP_PASS_DELAY_MS for a set
 * coming up, OBSERVING_PASS_DELAY_MS otherwise). Creation times have whole
 * seconds, and a burst creates many sets in one: within a second the sets keep a fixed order (a
 * fraction of a millisecond from the set's name), so the same sets stay first on every pass, which is
 * what brings them to Running first.
 */
export function queueRank(
  cs: CocoonSet | undefined,
  pods: readonly Pod[],
  nowMs: number,
  awaitingCreates = false,
): number {
  if (!cs) return nowMs;
  if (!passMovesSetOn(cs, pods, nowMs, awaitingCreates))
    return nowMs + (comingUp(cs) ? COMING_UP_PASS_DELAY_MS : OBSERVING_PASS_DELAY_MS);
  const created = Date.parse(cs.metadata.creationTimestamp ?? "");
  if (!Number.isFinite(created)) return nowMs;
  return Math.min(nowMs, created + nameFraction(`${cs.metadata.namespace ?? ""}/${cs.metadata.name ?? ""}`));
}

/** A fixed fraction in [0, 1) for a name (FNV-1a), in steps an epoch-ms double still resolves. */
function nameFraction(name: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 0x01000193);
  return ((hash >>> 0) % FRACTION_STEPS) / FRACTION_STEPS;
}

const FRACTION_STEPS = 1024;
