// A CocoonHibernation wake over a lagging pod cache: the CR informer is current (desire flipped to
// Wake) while the pod informer still serves the pod as it ran before the hibernate. The wake must
// not take that stale running pod for a woken VM and drop the :hibernate tag, the VM's only state.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Harness, MINUTE, VM } from "./support.ts";

test("a Wake over a pod cache that predates the hibernate keeps the snapshot", async () => {
  const h = new Harness();
  h.seedPod({ running: true, vmID: "vm-1", stamp: 1, lifecycle: { state: "ready", observedGeneration: 1 } });
  h.registry.put(VM, "hibernate");
  h.view.podLag += h.client.changesDuring(() => {
    // vk-cocoon hibernated the VM on the CR's request (its ID goes), then the user asked for a wake.
    h.seedPod({ hibernate: true, stamp: 1, lifecycle: { state: "hibernated", observedGeneration: 1 } });
    h.seedHibernation({ desire: "Wake", phase: "Hibernated", vmName: VM, readySince: h.ago(MINUTE) });
  });

  await h.reconcile().catch(() => undefined);

  assert.ok(h.registry.has(VM, "hibernate"), "the snapshot of the hibernated VM is kept");
  assert.notEqual(h.hibernation()?.status?.phase, "Active");
});
