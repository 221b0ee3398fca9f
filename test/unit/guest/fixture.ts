// Fixtures for the guest hooks unit tests: a set "demo" in "ns" naming the policy "fresh", its
// members as vk-cocoon runs them (managed, Linux, a live VM, Ready), policies, records, and a clock
// whose sleeps pass at once and are recorded, so backoffs are asserted without waiting for them.

import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import {
  API_VERSION_V1ALPHA1,
  type CocoonGuestPolicy,
  type CocoonGuestPolicySpec,
  type GuestHook,
  KIND_COCOONGUESTPOLICY,
} from "../../../src/apis/v1alpha1/types.ts";
import type { Clock } from "../../../src/clock.ts";
import { cocoonSetOwnerReference } from "../../../src/cocoonset/decide/pods.ts";
import {
  ANN_IP,
  ANN_MANAGED,
  ANN_OS,
  ANN_VM_ID,
  ANN_VM_NAME,
  LABEL_COCOONSET,
  LABEL_ROLE,
  LABEL_SLOT,
  TRUE,
} from "../../../src/contract/keys.ts";
import { ANN_GUEST_HOOKS, ANN_GUEST_POLICY } from "../../../src/guest/keys.ts";
import { encodeGuestHooksRecord, type GuestHooksRecord } from "../../../src/guest/record.ts";
import { LABEL_CLAIM } from "../../../src/pool/keys.ts";
import { formatRFC3339 } from "../../../src/rfc3339.ts";
import { cocoonSet, NS, SET, SET_UID } from "../../support/cocoonset.ts";

export { NS, SET, SET_UID };
export const POLICY = "fresh";
export const T0 = Date.parse("2026-01-01T00:00:00Z");
export const AT0 = formatRFC3339(T0);

/** The set, naming `policy` ("" names none) and bound to `claim` when given. */
export function guestSet(opts: { policy?: string; claim?: string } = {}): CocoonSet {
  const policy = opts.policy ?? POLICY;
  return cocoonSet(
    { agent: { image: "ubuntu", replicas: 1 } },
    {
      finalizers: [],
      ...(policy ? { annotations: { [ANN_GUEST_POLICY]: policy } } : {}),
      ...(opts.claim ? { labels: { [LABEL_CLAIM]: opts.claim } } : {}),
    },
  );
}

/** The member `demo-<slot>` of `cs`, running VM `vmID`, Ready (unless ready is false). */
export function member(
  cs: CocoonSet,
  opts: {
    slot?: number;
    vmID?: string;
    ready?: boolean;
    annotations?: Record<string, string>;
    record?: GuestHooksRecord;
  } = {},
): Pod {
  const slot = opts.slot ?? 0;
  const name = `${SET}-${slot}`;
  const ready = opts.ready ?? true;
  return {
    metadata: {
      name,
      namespace: NS,
      uid: `uid-${name}`,
      labels: {
        [LABEL_COCOONSET]: SET,
        [LABEL_ROLE]: slot === 0 ? "main" : "sub-agent",
        [LABEL_SLOT]: String(slot),
      },
      annotations: {
        [ANN_VM_NAME]: `vk-${NS}-${name}`,
        [ANN_MANAGED]: TRUE,
        [ANN_VM_ID]: opts.vmID ?? `vm-${name}`,
        [ANN_IP]: `10.0.0.${10 + slot}`,
        ...(opts.record ? { [ANN_GUEST_HOOKS]: encodeGuestHooksRecord(opts.record) } : {}),
        ...opts.annotations,
      },
      ownerReferences: [cocoonSetOwnerReference(cs)],
    },
    spec: { containers: [{ name: "agent" }] },
    status: {
      phase: ready ? "Running" : "Pending",
      conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
    },
  };
}

/** A Linux guest unless `os` says otherwise. */
export function withOS(pod: Pod, os: string): Pod {
  pod.metadata.annotations = { ...pod.metadata.annotations, [ANN_OS]: os };
  return pod;
}

export function hook(name: string, on: GuestHook["on"], extra: Partial<GuestHook> = {}): GuestHook {
  return { name, on, exec: { command: ["sh", "-c", `run-${name}`] }, ...extra };
}

export function policy(spec: CocoonGuestPolicySpec, generation = 1): CocoonGuestPolicy {
  return {
    apiVersion: API_VERSION_V1ALPHA1,
    kind: KIND_COCOONGUESTPOLICY,
    metadata: { name: POLICY, namespace: NS, generation },
    spec,
  };
}

/** A phase record at `at` (default T0) under generation 1. */
export function phase(
  result: "Succeeded" | "Failed",
  extra: { at?: number; policyGeneration?: number; hook?: string; message?: string } = {},
) {
  return {
    result,
    at: formatRFC3339(extra.at ?? T0),
    policyGeneration: extra.policyGeneration ?? 1,
    ...(extra.hook ? { hook: extra.hook } : {}),
    ...(extra.message ? { message: extra.message } : {}),
  };
}

/** A clock whose sleeps end at once, moving now() by the time slept; every sleep is recorded. */
export class SteppingClock implements Clock {
  current: number;
  readonly slept: number[] = [];
  constructor(start = T0) {
    this.current = start;
  }
  now(): number {
    return this.current;
  }
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw signal.reason;
    this.slept.push(ms);
    this.current += ms;
  }
}
