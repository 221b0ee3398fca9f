// The pre-hibernate hooks asked for and not yet recorded, by pod and the VM it runs. In memory only:
// whoever asked (a suspend, a CocoonHibernation, a migration) asks again on its next pass, so a
// restart loses nothing but the queue position.

import type { Pod } from "../apis/core.ts";

const podKey = (namespace: string, name: string): string => `${namespace}/${name}`;

export class PreHibernateRequests {
  /** VM ID asked for, by pod. */
  private readonly asked = new Map<string, string>();

  /** Records the request; true when it is new (the caller queues the pod). */
  ask(pod: Pod, vmID: string): boolean {
    const key = podKey(pod.metadata.namespace ?? "", pod.metadata.name ?? "");
    if (this.asked.get(key) === vmID) return false;
    this.asked.set(key, vmID);
    return true;
  }

  has(pod: Pod, vmID: string): boolean {
    return this.asked.get(podKey(pod.metadata.namespace ?? "", pod.metadata.name ?? "")) === vmID;
  }

  /** The hook's phase is recorded on the pod: the record answers from now on. */
  done(pod: Pod, vmID: string): void {
    const key = podKey(pod.metadata.namespace ?? "", pod.metadata.name ?? "");
    if (this.asked.get(key) === vmID) this.asked.delete(key);
  }

  forget(namespace: string, name: string): void {
    this.asked.delete(podKey(namespace, name));
  }

  get size(): number {
    return this.asked.size;
  }
}
