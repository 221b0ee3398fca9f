// Step 4: the pods listed with label name=<cs>, reduced to those this set controls (a stale label is
// not ownership) and grouped by role. Every later step of the pass reads this one classification.

import type { Pod } from "../apis/core.ts";
import { parseGoIntNumber } from "../contract/goint.ts";
import { LABEL_ROLE, LABEL_SLOT, ROLE_MAIN, ROLE_SUB_AGENT, ROLE_TOOLBOX } from "../contract/keys.ts";
import { isControlledBy, vmNameOf } from "../contract/pod.ts";

export interface Classification {
  main?: Pod;
  /** Sub-agents by slot; a pod whose slot label is not an integer is left out. */
  subAgents: Map<number, Pod>;
  /** Toolboxes by the slot label (the toolbox name). */
  toolboxes: Map<string, Pod>;
  /** Every owned pod not being deleted, any role, by pod name. */
  all: Map<string, Pod>;
  /** Owned pods with a deletionTimestamp: not acted on, but their VM is not free yet. */
  terminating: Pod[];
}

export function classifyPods(pods: Iterable<Pod>, owner: { name: string; uid: string }): Classification {
  const classification: Classification = {
    subAgents: new Map(),
    toolboxes: new Map(),
    all: new Map(),
    terminating: [],
  };
  for (const pod of pods) {
    if (!isControlledBy(pod, owner)) continue;
    // A pod being deleted is left alone, so a pass never re-deletes it or counts it as present.
    if (pod.metadata.deletionTimestamp) {
      classification.terminating.push(pod);
      continue;
    }
    classification.all.set(pod.metadata.name ?? "", pod);
    const labels = pod.metadata.labels ?? {};
    switch (labels[LABEL_ROLE]) {
      case ROLE_MAIN:
        classification.main = pod;
        break;
      case ROLE_SUB_AGENT: {
        const slot = parseSlot(labels[LABEL_SLOT]);
        if (slot !== undefined) classification.subAgents.set(slot, pod);
        break;
      }
      case ROLE_TOOLBOX:
        classification.toolboxes.set(labels[LABEL_SLOT] ?? "", pod);
        break;
    }
  }
  return classification;
}

/** The slot label as Go's strconv.ParseInt(label, 10, 32) reads it; undefined where Go errs. */
export function parseSlot(label: string | undefined): number | undefined {
  return label === undefined ? undefined : parseGoIntNumber(label, 32);
}

/** The VM names of the classified pods (not of terminating ones): a VM listed here has its pod. */
export function presentVMNames(classification: Classification): Set<string> {
  const names = new Set<string>();
  for (const pod of classification.all.values()) {
    const vm = vmNameOf(pod);
    if (vm) names.add(vm);
  }
  return names;
}
