// The vk-cocoon simulator: virtual nodes on a real kube-apiserver whose pods get simulated VMs, with
// real snapshot manifests pushed to a real registry. One pod watch per node, one worker per pod UID.

import type { Pod } from "../../../src/apis/core.ts";
import { systemClock } from "../../../src/clock.ts";
import { runInContainer } from "./exec.ts";
import { Faults } from "./faults.ts";
import type { Guest } from "./guest.ts";
import { KubeClient, KubeError, ok, type WatchEvent } from "./kube.ts";
import { type KubeletServer, startKubelet } from "./kubelet.ts";
import { deleteNode, registerNode, type SimNodeOptions } from "./node.ts";
import { OciClient } from "./oci.ts";
import { PodApi } from "./podapi.ts";
import { VmRecord } from "./record.ts";
import { type NodeRuntime, PodWorker, type SimTimings } from "./worker.ts";

export type { SnapshotOrigin } from "./clone.ts";
export { Faults } from "./faults.ts";
export type { Guest, GuestState } from "./guest.ts";
export type { SimNodeOptions } from "./node.ts";
export { OciClient } from "./oci.ts";
export type { LiveVm, VmEvent, VmEventKind, VmSource } from "./record.ts";
export { VmRecord } from "./record.ts";
export { pushSnapshot, readSnapshotId } from "./snapshot.ts";
export type { SimTimings } from "./worker.ts";

export interface SimulatorOptions {
  server: string;
  token: string;
  caFile: string;
  /** OCI base "host:port" or "host:port/path"; plain http for loopback and private addresses. */
  registry: string;
  nodes: SimNodeOptions[];
  timings?: Partial<SimTimings>;
}

export interface Simulator {
  addNode(n: SimNodeOptions): Promise<void>;
  removeNode(name: string): Promise<void>;
  /** Every VM booted, restored, forked, hibernated, woken, destroyed or refused. */
  readonly record: VmRecord;
  readonly faults: Faults;
  /** The guest of the pod's live VM, on whichever node runs it; undefined when it has none. */
  guestOf(namespace: string, podName: string): Guest | undefined;
  /** Stops watches, workers and timers; deletes the simulator's nodes only with removeNodes. */
  stop(opts?: { removeNodes?: boolean }): Promise<void>;
}

export const DEFAULT_TIMINGS: SimTimings = {
  bootMs: 100,
  readyMs: 100,
  hibernateMs: 150,
  wakeMs: 100,
  deleteMs: 50,
  sshDialTimeoutMs: 10_000,
};

const RELIST_BACKOFF_MS = 500;
const WATCH_TIMEOUT_S = 300;

interface SimNode {
  runtime: NodeRuntime;
  kubelet: KubeletServer;
  api: PodApi;
  workers: Map<string, PodWorker>;
  abort: AbortController;
  watching: Promise<void>;
}

export async function startSimulator(opts: SimulatorOptions): Promise<Simulator> {
  const sim = new PodSimulator(opts);
  try {
    for (const node of opts.nodes) await sim.addNode(node);
  } catch (err) {
    await sim.stop();
    throw err;
  }
  return sim;
}

class PodSimulator implements Simulator {
  readonly record = new VmRecord();
  readonly faults = new Faults();
  private readonly kube: KubeClient;
  private readonly oci: OciClient;
  private readonly timings: SimTimings;
  private readonly nodes = new Map<string, SimNode>();
  private readonly abort = new AbortController();
  private ipCounter = 0;
  /** seeNewPodsLate: the latest event of each new pod vk has not seen yet, by uid. */
  private readonly heldNewPods = new Map<string, WatchEvent>();
  private readonly seenLate = new WeakSet<WatchEvent>();
  private nodeCounter = 0;

  constructor(opts: SimulatorOptions) {
    this.kube = new KubeClient(opts.server, opts.token, opts.caFile);
    this.oci = new OciClient(opts.registry);
    this.timings = { ...DEFAULT_TIMINGS, ...opts.timings };
    this.faults.onChange(() => {
      for (const node of this.nodes.values()) for (const worker of node.workers.values()) worker.retryNow();
    });
  }

  async addNode(n: SimNodeOptions): Promise<void> {
    if (this.nodes.has(n.name)) throw new Error(`simulated node ${n.name} already exists`);
    this.nodeCounter++;
    // Each node's own loopback address, where its kubelet API listens and the API server dials it.
    const internalIP = `127.77.${this.nodeCounter >> 8}.${this.nodeCounter & 255}`;
    const runtime: NodeRuntime = {
      name: n.name,
      cpuClass: n.cpuClass ?? "",
      internalIP,
      vms: new Map(),
      snapshots: new Map(),
      snapshotGuests: new Map(),
      execTargets: new Map(),
    };
    const kubelet = await startKubelet(
      internalIP,
      runInContainer({
        node: runtime,
        faults: this.faults,
        record: this.record,
        clock: systemClock,
        sshDialTimeoutMs: this.timings.sshDialTimeoutMs,
      }),
    );
    try {
      await registerNode(this.kube, n, internalIP, kubelet.port);
    } catch (err) {
      await kubelet.close();
      throw err;
    }
    const abort = new AbortController();
    const onStop = () => abort.abort();
    this.abort.signal.addEventListener("abort", onStop, { once: true });
    const node: SimNode = {
      runtime,
      kubelet,
      api: new PodApi(this.kube, systemClock, n.name),
      workers: new Map(),
      abort,
      watching: Promise.resolve(),
    };
    this.nodes.set(n.name, node);
    node.watching = this.watchPods(node);
  }

  guestOf(namespace: string, podName: string): Guest | undefined {
    for (const node of this.nodes.values()) {
      const target = node.runtime.execTargets.get(`${namespace}/${podName}`);
      if (target !== undefined) return target.guest;
    }
    return undefined;
  }

  async removeNode(name: string): Promise<void> {
    const node = this.nodes.get(name);
    if (node === undefined) return;
    await this.stopNode(node);
    this.nodes.delete(name);
    await deleteNode(this.kube, name);
  }

  async stop(opts: { removeNodes?: boolean } = {}): Promise<void> {
    this.abort.abort();
    for (const node of this.nodes.values()) await this.stopNode(node);
    if (opts.removeNodes === true) {
      for (const name of this.nodes.keys()) await deleteNode(this.kube, name).catch(() => undefined);
    }
    this.nodes.clear();
    this.kube.close();
  }

  private async stopNode(node: SimNode): Promise<void> {
    node.abort.abort();
    await node.watching;
    await Promise.all([...node.workers.values()].map((w) => w.stop()));
    await node.kubelet.close();
  }

  /** List, then watch from the list's resourceVersion; re-list after 410 Gone or any watch failure. */
  private async watchPods(node: SimNode): Promise<void> {
    const { signal } = node.abort;
    const selector = encodeURIComponent(`spec.nodeName=${node.runtime.name}`);
    let resourceVersion = "";
    while (!signal.aborted) {
      try {
        if (resourceVersion === "") resourceVersion = await this.relist(node, selector, signal);
        let gone = false;
        const status = await this.kube.watch(
          `/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=${WATCH_TIMEOUT_S}` +
            `&fieldSelector=${selector}&resourceVersion=${resourceVersion}`,
          signal,
          (event) => {
            if (event.type === "ERROR") {
              gone = true;
              return;
            }
            resourceVersion = event.object.metadata?.resourceVersion ?? resourceVersion;
            this.dispatch(node, event);
          },
        );
        if (gone || status === 410) resourceVersion = "";
        else if (status !== 200) throw new Error(`watch pods on ${node.runtime.name}: HTTP ${status}`);
      } catch {
        if (signal.aborted) return;
        resourceVersion = "";
        await systemClock.sleep(RELIST_BACKOFF_MS, signal).catch(() => undefined);
      }
    }
  }

  private async relist(node: SimNode, selector: string, signal: AbortSignal): Promise<string> {
    const res = await this.kube.request<{ metadata: { resourceVersion: string }; items: Pod[] }>(
      "GET",
      `/api/v1/pods?fieldSelector=${selector}`,
      { signal },
    );
    if (!ok(res)) throw new KubeError(`list pods on ${node.runtime.name}`, res);
    const present = new Set<string>();
    for (const pod of res.body.items) {
      present.add(pod.metadata.uid ?? "");
      this.dispatch(node, { type: "MODIFIED", object: pod as unknown as WatchEvent["object"] });
    }
    for (const [uid, worker] of node.workers) {
      if (present.has(uid)) continue;
      worker.forget();
      node.workers.delete(uid);
    }
    return res.body.metadata.resourceVersion;
  }

  private dispatch(node: SimNode, event: WatchEvent): void {
    if (event.type === "BOOKMARK") return;
    const pod = event.object as unknown as Pod;
    const uid = pod.metadata.uid ?? "";
    const existing = node.workers.get(uid);
    if (event.type === "DELETED") {
      this.heldNewPods.delete(uid);
      existing?.forget();
      node.workers.delete(uid);
      return;
    }
    if (existing !== undefined) {
      existing.update(pod);
      return;
    }
    // Terminal pods have nothing for vk to do; the API server deletes them directly.
    if (pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") return;
    if (this.seeLate(node, uid, event)) return;
    const worker = new PodWorker(pod, {
      node: node.runtime,
      api: node.api,
      oci: this.oci,
      faults: this.faults,
      record: this.record,
      timings: this.timings,
      clock: systemClock,
      signal: node.abort.signal,
      nextIP: () => this.nextIP(),
    });
    node.workers.set(uid, worker);
    worker.update(pod);
  }

  /**
   * The seeNewPodsLate fault: a new pod's events are held, and the worker is made from the latest of
   * them once the delay has passed. True while held.
   */
  private seeLate(node: SimNode, uid: string, event: WatchEvent): boolean {
    const delayMs = this.faults.newPodSightDelay();
    if (delayMs <= 0 || this.seenLate.has(event)) return false;
    const held = this.heldNewPods.has(uid);
    this.heldNewPods.set(uid, event);
    if (!held) {
      setTimeout(() => {
        const latest = this.heldNewPods.get(uid);
        this.heldNewPods.delete(uid);
        if (latest === undefined || node.abort.signal.aborted) return;
        this.seenLate.add(latest);
        this.dispatch(node, latest);
      }, delayMs);
    }
    return true;
  }

  private nextIP(): string {
    this.ipCounter++;
    return `10.88.${(this.ipCounter >> 8) & 255}.${this.ipCounter & 255 || 1}`;
  }
}
