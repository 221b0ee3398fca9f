// The guest gate (src/guestgate.ts) over the policy cache and the pods' records: what the pass and the
// CocoonHibernation controller read. A pre-hibernate hook that is owed is asked for here and queued on
// the guest controller, which runs it and records the outcome on the pod.

import type { Pod } from "../apis/core.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import type { CocoonGuestPolicy } from "../apis/v1alpha1/types.ts";
import type { Clock } from "../clock.ts";
import type { GuestGate, HeldMember, HibernateVerdict } from "../guestgate.ts";
import { guestPolicyName, memberGate, preHibernateVerdict, vmIDOf } from "./decide.ts";
import type { PreHibernateRequests } from "./requests.ts";

const NOT_NAMED = { named: false, held: new Map<string, HeldMember>() } as const;
const PROCEED: HibernateVerdict = { action: "proceed" };

export class GuestHooksGate implements GuestGate {
  private readonly policy: (namespace: string, name: string) => CocoonGuestPolicy | undefined;
  private readonly requests: PreHibernateRequests;
  private readonly clock: Clock;
  /** Queues the pod on the guest controller; set once the controller exists. */
  enqueue: (namespace: string, pod: string) => void = () => undefined;

  constructor(options: {
    policy: (namespace: string, name: string) => CocoonGuestPolicy | undefined;
    requests: PreHibernateRequests;
    clock: Clock;
  }) {
    this.policy = options.policy;
    this.requests = options.requests;
    this.clock = options.clock;
  }

  heldMembers(
    cs: CocoonSet,
    pods: Iterable<Pod>,
    claim?: string,
  ): { named: boolean; held: ReadonlyMap<string, HeldMember> } {
    const name = guestPolicyName(cs);
    if (name === "") return NOT_NAMED;
    const policy = this.policy(cs.metadata.namespace ?? "", name) ?? null;
    const held = new Map<string, HeldMember>();
    for (const pod of pods) {
      const member = memberGate(pod, cs, policy, claim);
      if (member) held.set(pod.metadata.name ?? "", member);
    }
    return { named: true, held };
  }

  beforeHibernate(cs: CocoonSet, pod: Pod): HibernateVerdict {
    const name = guestPolicyName(cs);
    if (name === "") return PROCEED;
    const policy = this.policy(cs.metadata.namespace ?? "", name) ?? null;
    const verdict = preHibernateVerdict(pod, policy, this.clock.now());
    if (verdict.action !== "run") return verdict;
    if (this.requests.ask(pod, vmIDOf(pod)))
      this.enqueue(pod.metadata.namespace ?? "", pod.metadata.name ?? "");
    return { action: "wait", message: `pre-hibernate hooks are running on pod ${pod.metadata.name}` };
  }
}
