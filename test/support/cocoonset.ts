// Fixtures for CocoonSet reconcile unit tests: a set and its pods in namespace "ns" (the names the
// upstream tests use: demo, demo-0, vk-ns-demo-0), and reconciler dependencies over the fakes.

import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet, CocoonSetSpec } from "../../src/apis/v1/types.ts";
import { FakeClock } from "../../src/clock.ts";
import { cocoonSetOwnerReference } from "../../src/cocoonset/decide/pods.ts";
import type { CocoonSetDeps } from "../../src/cocoonset/reconciler.ts";
import { FINALIZER_COCOONSET, LABEL_COCOONSET, LABEL_ROLE, LABEL_SLOT } from "../../src/contract/keys.ts";
import { COCOONSETS } from "../../src/controller/resources.ts";
import { PodCreateExpectations } from "../../src/pass/expectations.ts";
import { FakeSnapshotRegistry } from "../env/registry-fake.ts";
import { RecordingEvents } from "./events.ts";
import { FakeClient, FakeView } from "./fakeclient.ts";
import { silentLogger } from "./log.ts";

export const NS = "ns";
export const SET = "demo";
export const SET_UID = "demo-uid";

/** A CocoonSet "demo" carrying the finalizer; fields of `spec` override the defaults. */
export function cocoonSet(
  spec: Partial<CocoonSetSpec> = {},
  metadata: Partial<CocoonSet["metadata"]> = {},
): CocoonSet {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: {
      name: SET,
      namespace: NS,
      uid: SET_UID,
      generation: 1,
      finalizers: [FINALIZER_COCOONSET],
      ...metadata,
    },
    spec: { agent: { image: "ubuntu" }, ...spec },
  };
}

/** A pod labelled for the set and, unless owned is false, controlled by `owner`. */
export function setPod(
  owner: CocoonSet,
  name: string,
  role: string,
  slot: string,
  opts: { annotations?: Record<string, string>; owned?: boolean } = {},
): Pod {
  return {
    metadata: {
      name,
      namespace: NS,
      labels: { [LABEL_COCOONSET]: SET, [LABEL_ROLE]: role, [LABEL_SLOT]: slot },
      annotations: { "vm.cocoonstack.io/name": `vk-${NS}-${name}`, ...opts.annotations },
      ...(opts.owned === false ? {} : { ownerReferences: [cocoonSetOwnerReference(owner)] }),
    },
    spec: { containers: [{ name: "agent" }] },
    status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
  };
}

export interface Harness {
  client: FakeClient;
  view: FakeView;
  registry: FakeSnapshotRegistry;
  events: RecordingEvents;
  clock: FakeClock;
  deps: CocoonSetDeps;
}

export function harness(opts: { withRegistry?: boolean } = {}): Harness {
  const client = new FakeClient();
  const view = new FakeView(client);
  const registry = new FakeSnapshotRegistry();
  const events = new RecordingEvents();
  const clock = new FakeClock();
  const deps: CocoonSetDeps = {
    client,
    view,
    registry: opts.withRegistry === false ? undefined : registry,
    events,
    clock,
    log: silentLogger(),
    expectations: new PodCreateExpectations(clock),
  };
  return { client, view, registry, events, clock, deps };
}

/** Seeds the set and returns it as stored (uid, resourceVersion and generation filled in). */
export function seedSet(client: FakeClient, cs: CocoonSet): CocoonSet {
  return client.seed(COCOONSETS, cs);
}

export function storedSet(client: FakeClient): CocoonSet | undefined {
  return client.peek<CocoonSet>(COCOONSETS, NS, SET);
}
