// Fixtures for the scaling steps (11–13): pods exactly as the builders make them (so they match the
// spec), made Ready or failed the way the kubelet and vk-cocoon report it, and a Pass over the store.

import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet, CocoonSetPhase, CocoonSetSpec } from "../../src/apis/v1/types.ts";
import { buildMainPod } from "../../src/cocoonset/decide/pods.ts";
import { ANN_LIFECYCLE_STATE, ANN_VM_ID, LIFECYCLE_FAILED } from "../../src/contract/keys.ts";
import { PODS } from "../../src/controller/resources.ts";
import { classifyPods } from "../../src/pass/classify.ts";
import { Pass } from "../../src/pass/pass.ts";
import { cocoonSet, type Harness, harness, NS, SET, seedSet, storedSet } from "./cocoonset.ts";

export const IMAGE = "ghcr.io/cocoonstack/cocoon/ubuntu:24.04";
export const OTHER_IMAGE = "ghcr.io/cocoonstack/cocoon/ubuntu:26.04";
export const MAIN_VM = "vk-ns-demo-0";
export const MAIN_NODE = "cocoonset-node-2";

/** The set "demo" (uid test-uid, image IMAGE) with its finalizer; `spec` overrides. */
export function scalingSet(spec: Partial<CocoonSetSpec> = {}, generation = 1): CocoonSet {
  return cocoonSet({ agent: { image: IMAGE, replicas: 0 }, ...spec }, { uid: "test-uid", generation });
}

/** The set with a status in `phase` (one agent desired, none ready). */
export function withPhase(cs: CocoonSet, phase: CocoonSetPhase): CocoonSet {
  cs.status = { phase, readyAgents: 0, desiredAgents: 1, readyToolboxes: 0, desiredToolboxes: 0 };
  return cs;
}

/** The main as built when spec.nodeName was `pin` (undefined: unpinned), e.g. before a re-pin. */
export function mainBuiltUnderPin(cs: CocoonSet, pin: string | undefined): Pod {
  const { nodeName: _current, ...spec } = cs.spec;
  return buildMainPod({ ...cs, spec: pin ? { ...spec, nodeName: pin } : spec });
}

/** Running, Ready, with a VM on `node`, as vk-cocoon reports a booted pod (a static VM keeps its id). */
export function ready(pod: Pod, node = MAIN_NODE): Pod {
  pod.spec.nodeName = node;
  pod.metadata.annotations = { [ANN_VM_ID]: `id-${pod.metadata.name}`, ...pod.metadata.annotations };
  pod.status = {
    phase: "Running",
    conditions: [{ type: "Ready", status: "True" }],
    containerStatuses: [{ name: "agent", ready: true, restartCount: 0, state: { running: {} } }],
  };
  return pod;
}

/** The kubelet's terminal phase. */
export function phaseFailed(pod: Pod): Pod {
  pod.status = { ...pod.status, phase: "Failed" };
  return pod;
}

/** vk-cocoon's lifecycle failed on a pod that still runs. */
export function lifecycleFailed(pod: Pod): Pod {
  pod.metadata.annotations = { ...pod.metadata.annotations, [ANN_LIFECYCLE_STATE]: LIFECYCLE_FAILED };
  return pod;
}

export interface ScalingHarness extends Harness {
  /** The set as stored now. */
  set(): CocoonSet;
  /** A fresh pass over the store: the set and its classified pods as the cache shows them. */
  pass(): Pass;
  seedPods(...pods: Pod[]): void;
  pod(name: string): Pod | undefined;
  /** Names of the pods created, in call order. */
  created(): string[];
  /** Names of the pods deleted, in call order. */
  deleted(): string[];
}

/** Seeds the set; `pods` gets the stored set (uid, generation) to build pods from. */
export function scalingHarness(
  cs: CocoonSet,
  pods: (stored: CocoonSet) => Pod[] = () => [],
  opts: { withRegistry?: boolean } = {},
): ScalingHarness {
  const base = harness(opts);
  const stored = seedSet(base.client, cs);
  for (const pod of pods(stored)) base.client.seed(PODS, pod);
  const set = (): CocoonSet => {
    const current = storedSet(base.client);
    if (!current) throw new Error("set not stored");
    return current;
  };
  return {
    ...base,
    set,
    pass: () => {
      const current = set();
      const classified = classifyPods(base.view.listSetPods(NS, SET), {
        name: SET,
        uid: current.metadata.uid ?? "",
      });
      return new Pass(current, classified, base.deps, new AbortController().signal);
    },
    seedPods: (...more) => {
      for (const pod of more) base.client.seed(PODS, pod);
    },
    pod: (name) => base.client.peek<Pod>(PODS, NS, name),
    created: () =>
      base.client.calls.filter((c) => c.verb === "create" && c.resource === "pods").map((c) => c.name),
    deleted: () =>
      base.client.calls.filter((c) => c.verb === "delete" && c.resource === "pods").map((c) => c.name),
  };
}
