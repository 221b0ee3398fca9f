// The pre-hibernate gate of the pass (docs/guest.md): before a step annotates VMs to hibernate, every
// one of them must have passed its pre-hibernate hooks, so a group is quiesced before any member's
// snapshot starts. Answers come from the guest gate's caches; an owed hook is queued, never run here.

import type { Pod } from "../apis/core.ts";
import type { HibernateVerdict } from "../guestgate.ts";
import type { Pass } from "./pass.ts";

/**
 * The verdict for the group: refused when any VM's Fail hook failed (the soonest retry), else wait
 * while any hook is owed, else proceed. Without guest hooks, proceed.
 */
export function preHibernateGate(pass: Pass, pods: readonly Pod[]): HibernateVerdict {
  const gate = pass.deps.guest;
  if (!gate) return { action: "proceed" };
  let waiting: HibernateVerdict | undefined;
  let refused: Extract<HibernateVerdict, { action: "refused" }> | undefined;
  for (const pod of pods) {
    const verdict = gate.beforeHibernate(pass.cs, pod);
    if (verdict.action === "refused" && (!refused || verdict.retryAfterMs < refused.retryAfterMs))
      refused = verdict;
    else if (verdict.action === "wait") waiting ??= verdict;
  }
  return refused ?? waiting ?? { action: "proceed" };
}
