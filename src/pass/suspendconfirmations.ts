// The suspends step 6's gate confirmed in this process. The gate asks the registry for every VM's
// `:hibernate` manifest before it writes Suspended; once it has, the same set seen again unchanged has
// nothing new to ask, so a settled Suspended set makes no registry call. One instance per controller,
// shared by its passes; a restart starts empty and probes once.

import type { Pod } from "../apis/core.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import { sortByName } from "../contract/order.ts";

/**
 * Per set, what the gate saw when every `:hibernate` manifest was in the registry and Suspended was
 * written (gateFingerprint). A new or changed pod, a new generation, or another set under the name
 * does not match and is probed afresh.
 */
export class SuspendConfirmations {
  readonly #confirmed = new Map<string, string>();

  holds(setKey: string, fingerprint: string): boolean {
    return this.#confirmed.get(setKey) === fingerprint;
  }

  confirm(setKey: string, fingerprint: string): void {
    this.#confirmed.set(setKey, fingerprint);
  }

  forget(setKey: string): void {
    this.#confirmed.delete(setKey);
  }
}

/**
 * What the gate saw of a set: its uid and generation, and every owned pod's name, uid and
 * resourceVersion (any write to a pod, vk-cocoon's lifecycle reports included, changes it).
 */
export function gateFingerprint(cs: CocoonSet, pods: Iterable<Pod>): string {
  const seen = sortByName(pods).map(
    (pod) => `${pod.metadata.name}/${pod.metadata.uid}/${pod.metadata.resourceVersion}`,
  );
  return JSON.stringify([cs.metadata.uid, cs.metadata.generation, seen]);
}
