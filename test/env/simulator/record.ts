// The append-only journal of everything the simulator did to VMs, for test assertions.

import type { SnapshotOrigin } from "./clone.ts";

export type VmEventKind =
  | "boot"
  | "restore"
  | "fork"
  | "hibernate"
  | "wake"
  | "destroy"
  | "push-latest"
  | "refuse"
  /** A command ran in the guest over exec (detail: the command line and how it ended). */
  | "exec"
  /** vk-cocoon found the VM gone and evicted its pod (the VM's live state is lost). */
  | "evict";

/** How a live VM came to be: fresh (run mode), clone, fork, restore (from :hibernate), adopt (unmanaged). */
export type VmSource = "fresh" | "clone" | "fork" | "restore" | "adopt";

export interface VmEvent {
  /** Milliseconds since the epoch. */
  time: number;
  kind: VmEventKind;
  vmName: string;
  namespace: string;
  podName: string;
  podUID: string;
  node: string;
  /** The VM's cocoon ID ("" for a refusal or a pod without a VM). */
  vmID: string;
  /** Set on boot, restore, fork and wake. */
  source?: VmSource;
  /** Restore and wake: whether the node-local snapshot was used instead of a registry pull. */
  fromLocalCache?: boolean;
  /** Restore and wake: the snapshot used (repository:tag, digest, the VM it was taken of). */
  snapshot?: SnapshotOrigin;
  /** Destroy: whether the node-local snapshot was kept (keep-snapshot-on-delete). */
  keptLocalSnapshot?: boolean;
  /** Free text: refusal message, pushed tag, ... */
  detail?: string;
}

export interface LiveVm {
  vmName: string;
  vmID: string;
  namespace: string;
  podName: string;
  podUID: string;
  node: string;
  source: VmSource;
}

const STARTS: ReadonlySet<VmEventKind> = new Set(["boot", "restore", "fork", "wake"]);
const ENDS: ReadonlySet<VmEventKind> = new Set(["hibernate", "destroy", "evict"]);

export class VmRecord {
  private readonly log: VmEvent[] = [];
  private waiters: { match: (e: VmEvent) => boolean; resolve: (e: VmEvent) => void }[] = [];

  append(event: VmEvent): void {
    this.log.push(event);
    const due = this.waiters.filter((w) => w.match(event));
    this.waiters = this.waiters.filter((w) => !w.match(event));
    for (const w of due) w.resolve(event);
  }

  /** Every event so far, oldest first, optionally filtered. */
  events(filter?: Partial<Pick<VmEvent, "kind" | "vmName" | "podName" | "podUID" | "node">>): VmEvent[] {
    if (filter === undefined) return [...this.log];
    return this.log.filter((e) =>
      Object.entries(filter).every(([k, v]) => v === undefined || e[k as keyof VmEvent] === v),
    );
  }

  /** VMs currently running, derived from the journal (a start not yet followed by hibernate/destroy). */
  liveVMs(): LiveVm[] {
    const live = new Map<string, LiveVm>();
    for (const e of this.log) {
      const key = `${e.node}/${e.vmName}`;
      if (STARTS.has(e.kind)) {
        live.set(key, {
          vmName: e.vmName,
          vmID: e.vmID,
          namespace: e.namespace,
          podName: e.podName,
          podUID: e.podUID,
          node: e.node,
          source: e.source ?? "fresh",
        });
      } else if (ENDS.has(e.kind) && live.get(key)?.vmID === e.vmID) {
        live.delete(key);
      }
    }
    return [...live.values()];
  }

  /** Resolves with the first past or future event matching, or rejects after timeoutMs. */
  waitFor(match: (e: VmEvent) => boolean, timeoutMs = 30_000): Promise<VmEvent> {
    const past = this.log.find(match);
    if (past !== undefined) return Promise.resolve(past);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new Error(`no matching VM event within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = (e: VmEvent) => {
        clearTimeout(timer);
        resolve(e);
      };
      this.waiters.push({ match, resolve: done });
    });
  }
}
