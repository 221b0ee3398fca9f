// Fixtures for the CocoonHibernation reconciler tests: the Go tests' pod demo-0 / vk-ns-demo-0 in
// namespace ns, CRs with a chosen phase and Ready.lastTransitionTime, and a harness that runs the
// reconciler over a FakeClient, a FakeSnapshotRegistry, a recording event sink and a FakeClock.

import type { Pod } from "../../../src/apis/core.ts";
import type {
  CocoonHibernation,
  CocoonHibernationPhase,
  CocoonHibernationStatus,
} from "../../../src/apis/v1/types.ts";
import { API_VERSION, KIND_COCOONHIBERNATION } from "../../../src/apis/v1/types.ts";
import { FakeClock } from "../../../src/clock.ts";
import {
  ANN_COCOONSET_GENERATION,
  ANN_HIBERNATE,
  ANN_LIFECYCLE_OBSERVED_GENERATION,
  ANN_LIFECYCLE_STATE,
  ANN_MANAGED,
  ANN_VM_ID,
  ANN_VM_NAME,
  FINALIZER_COCOONHIBERNATION,
} from "../../../src/contract/keys.ts";
import type { Result } from "../../../src/controller/reconciler.ts";
import { COCOONHIBERNATIONS, PODS } from "../../../src/controller/resources.ts";
import { HibernationReconciler } from "../../../src/hibernation/reconciler.ts";
import type { HibernationView } from "../../../src/hibernation/view.ts";
import type { SnapshotRegistry } from "../../../src/registry/index.ts";
import { formatRFC3339 } from "../../../src/rfc3339.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import { RecordingEvents } from "../../support/events.ts";
import { FakeClient } from "../../support/fakeclient.ts";

export const NS = "ns";
export const POD = "demo-0";
export const VM = "vk-ns-demo-0";
export const TAG = `${VM}:hibernate`;
export const MINUTE = 60_000;

export interface PodOptions {
  name?: string;
  /** null: no VM name annotation. */
  vmName?: string | null;
  hibernate?: boolean;
  lifecycle?: { state: string; observedGeneration?: number };
  /** The CocoonSet generation stamp. */
  stamp?: number;
  vmID?: string;
  running?: boolean;
}

export function podFixture(opts: PodOptions = {}): Pod {
  const annotations: Record<string, string> = { [ANN_MANAGED]: "true" };
  const vmName = opts.vmName === undefined ? VM : opts.vmName;
  if (vmName !== null) annotations[ANN_VM_NAME] = vmName;
  if (opts.hibernate) annotations[ANN_HIBERNATE] = "true";
  if (opts.lifecycle) {
    annotations[ANN_LIFECYCLE_STATE] = opts.lifecycle.state;
    annotations[ANN_LIFECYCLE_OBSERVED_GENERATION] = String(opts.lifecycle.observedGeneration ?? 0);
  }
  if (opts.stamp !== undefined) annotations[ANN_COCOONSET_GENERATION] = String(opts.stamp);
  if (opts.vmID) annotations[ANN_VM_ID] = opts.vmID;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: opts.name ?? POD, namespace: NS, annotations },
    spec: { containers: [{ name: "agent" }] },
    status: opts.running
      ? {
          phase: "Running",
          containerStatuses: [{ name: "agent", ready: true, restartCount: 0, state: { running: {} } }],
        }
      : { phase: "Pending" },
  } as Pod;
}

export interface HibernationOptions {
  name?: string;
  uid?: string;
  desire?: string;
  podRef?: string;
  phase?: CocoonHibernationPhase;
  vmName?: string;
  /** Ready.lastTransitionTime, in ms since the epoch. */
  readySince?: number;
  readyMessage?: string;
  generation?: number;
  observedGeneration?: number;
  finalizer?: boolean;
  deleting?: boolean;
}

export function hibernationFixture(opts: HibernationOptions = {}): CocoonHibernation {
  const status: CocoonHibernationStatus = {};
  if (opts.phase) status.phase = opts.phase;
  if (opts.vmName) status.vmName = opts.vmName;
  if (opts.observedGeneration !== undefined) status.observedGeneration = opts.observedGeneration;
  if (opts.readySince !== undefined) {
    status.conditions = [
      {
        type: "Ready",
        status: opts.phase === "Hibernated" || opts.phase === "Active" ? "True" : "False",
        reason: "Pending",
        message: opts.readyMessage ?? opts.phase ?? "",
        lastTransitionTime: formatRFC3339(opts.readySince),
      },
    ];
  }
  return {
    apiVersion: API_VERSION,
    kind: KIND_COCOONHIBERNATION,
    metadata: {
      name: opts.name ?? "hib",
      namespace: NS,
      ...(opts.uid ? { uid: opts.uid } : {}),
      ...(opts.generation !== undefined ? { generation: opts.generation } : {}),
      ...(opts.finalizer === false ? {} : { finalizers: [FINALIZER_COCOONHIBERNATION] }),
      ...(opts.deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
    },
    spec: { podRef: { name: opts.podRef ?? POD }, desire: (opts.desire ?? "Hibernate") as "Hibernate" },
    ...(Object.keys(status).length > 0 ? { status } : {}),
  };
}

/** The cache view over a FakeClient's store: reads are never recorded as calls. */
export class FakeHibernationView implements HibernationView {
  /** Serve pods as they were this many store changes ago (a lagging pod informer). */
  podLag = 0;
  private readonly client: FakeClient;

  constructor(client: FakeClient) {
    this.client = client;
  }

  getHibernation(namespace: string, name: string): CocoonHibernation | undefined {
    return this.client.peek<CocoonHibernation>(COCOONHIBERNATIONS, namespace, name);
  }

  async getPod(namespace: string, name: string): Promise<Pod | undefined> {
    return this.client.peek<Pod>(PODS, namespace, name, this.podLag);
  }

  listHibernations(namespace: string): CocoonHibernation[] {
    return this.client.all<CocoonHibernation>(COCOONHIBERNATIONS, namespace);
  }
}

export class Harness {
  readonly clock = new FakeClock();
  readonly client: FakeClient;
  readonly registry: FakeSnapshotRegistry;
  readonly events = new RecordingEvents();
  readonly view: FakeHibernationView;
  readonly reconciler: HibernationReconciler;

  constructor(opts: { client?: FakeClient; registry?: SnapshotRegistry } = {}) {
    this.client = opts.client ?? new FakeClient();
    this.client.now = () => formatRFC3339(this.clock.now());
    this.registry = new FakeSnapshotRegistry();
    this.view = new FakeHibernationView(this.client);
    this.reconciler = new HibernationReconciler({
      client: this.client,
      view: this.view,
      registry: opts.registry ?? this.registry,
      events: this.events,
      clock: this.clock,
    });
  }

  /** Milliseconds ago, on the harness clock. */
  ago(ms: number): number {
    return this.clock.now() - ms;
  }

  seedHibernation(opts: HibernationOptions = {}): CocoonHibernation {
    return this.client.seed(COCOONHIBERNATIONS, hibernationFixture(opts));
  }

  seedPod(opts: PodOptions = {}): Pod {
    return this.client.seed(PODS, podFixture(opts));
  }

  /** Merges annotations into the pod (null removes one), as vk's writes would; not a recorded call. */
  annotatePod(annotations: Record<string, string | null>, name = POD): void {
    const pod = this.pod(name);
    if (!pod) throw new Error(`no pod ${name}`);
    const merged = { ...pod.metadata.annotations };
    for (const [key, value] of Object.entries(annotations)) {
      if (value === null) delete merged[key];
      else merged[key] = value;
    }
    this.client.seed(PODS, { ...pod, metadata: { ...pod.metadata, annotations: merged } });
  }

  reconcile(name = "hib"): Promise<Result> {
    return this.reconciler.reconcile({ namespace: NS, name }, new AbortController().signal);
  }

  hibernation(name = "hib"): CocoonHibernation | undefined {
    return this.client.peek<CocoonHibernation>(COCOONHIBERNATIONS, NS, name);
  }

  pod(name = POD): Pod | undefined {
    return this.client.peek<Pod>(PODS, NS, name);
  }

  readySince(name = "hib"): number | undefined {
    const ltt = this.hibernation(name)?.status?.conditions?.find(
      (c) => c.type === "Ready",
    )?.lastTransitionTime;
    return ltt === undefined ? undefined : Date.parse(ltt);
  }

  statusPatches(name = "hib"): number {
    return this.client
      .writes()
      .filter((c) => c.resource === "cocoonhibernations" && c.subresource === "status" && c.name === name)
      .length;
  }

  podPatches(): unknown[] {
    return this.client
      .writes()
      .filter((c) => c.resource === "pods" && c.verb === "patch")
      .map((c) => c.body);
  }
}

/** Lets pending promise callbacks run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
