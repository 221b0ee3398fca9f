// What the CocoonSet pass and the CocoonHibernation controller ask of guest hooks (docs/guest.md),
// answered by src/guest/ from its caches: which members hooks hold back from Ready, and whether a VM
// may be asked to hibernate yet. Every answer is a cache read; a pre-hibernate hook that is owed is
// queued to run, never run by the caller, so no pass waits on a guest.

import type { Pod } from "./apis/core.ts";
import type { CocoonSet } from "./apis/v1/types.ts";

/** Why a member is not counted Ready: its hooks have not run yet, or a Fail hook failed. */
export interface HeldMember {
  reason: string;
  message: string;
}

export type HibernateVerdict =
  /** No pre-hibernate hook is owed, or it succeeded (or failed under Ignore) for the VM running now. */
  | { action: "proceed" }
  /** The hook is queued or running: ask again when the pod's record changes. */
  | { action: "wait"; message: string }
  /** A Fail hook failed: the VM is not hibernated; the hook runs again when retryAfterMs has passed. */
  | { action: "refused"; message: string; retryAfterMs: number };

export interface GuestGate {
  /**
   * The members of a set naming a guest policy that its hooks hold back, by pod name, and whether
   * the set names one at all (its GuestHooks condition is written only then). `claim`: the claim that
   * has bound the set, when the caller knows it better than the set's label (a cache behind the bind).
   */
  heldMembers(
    cs: CocoonSet,
    pods: Iterable<Pod>,
    claim?: string,
  ): { named: boolean; held: ReadonlyMap<string, HeldMember> };
  /** Before `pod` is annotated to hibernate; queues the pre-hibernate hook when it is owed. */
  beforeHibernate(cs: CocoonSet, pod: Pod): HibernateVerdict;
}
