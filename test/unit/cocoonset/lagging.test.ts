// Every destructive write of the CocoonSet pass over a lagging cache: the view serves the set and its
// pods as they were before other writers (vk-cocoon, the kubelet, a user, another pass) changed them
// on the API server. Each test builds a cached state that would make the write safe and a server
// state that makes it lose live state, and asserts that no live state is lost: no pod whose VM runs
// (or whose snapshot is its only state) is deleted, and no :hibernate tag goes whose VM is not running
// again. The reconciler may re-read the API server (its uncached GET) and act on what it finds.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import { buildMainPod, buildSubAgentPod } from "../../../src/cocoonset/decide/pods.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import {
  ANN_HIBERNATE,
  ANN_HIBERNATE_RECLAIM,
  ANN_HIBERNATED_ON_NODE,
  TAG_HIBERNATE,
  TRUE,
} from "../../../src/contract/keys.ts";
import { COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import { NS, SET } from "../../support/cocoonset.ts";
import {
  IMAGE,
  lifecycleFailed,
  mainBuiltUnderPin,
  phaseFailed,
  ready,
  type ScalingHarness,
  scalingHarness,
  scalingSet,
  withPhase,
} from "../../support/scaling.ts";
import { annotate, hibernated, woken } from "../../support/suspend.ts";

const VM0 = "vk-ns-demo-0";
const VM1 = "vk-ns-demo-1";

async function reconcileSettling(h: ScalingHarness): Promise<void> {
  try {
    await new CocoonSetReconciler(h.deps).reconcile(
      { namespace: NS, name: SET },
      new AbortController().signal,
    );
  } catch {
    // A pass that refuses to act on what it read (a conflict, a failed check) may fail: the
    // controller retries it with backoff. Only what it wrote matters here.
  }
}

function stored(h: ScalingHarness, name: string): Pod {
  return h.pod(name) ?? assert.fail(`no pod ${name}`);
}

/** The pod on the server is alive: present and not being deleted. */
function assertAlive(h: ScalingHarness, name: string, uid?: string): void {
  const pod = stored(h, name);
  assert.equal(pod.metadata.deletionTimestamp, undefined, `${name} is being deleted`);
  if (uid !== undefined) assert.equal(pod.metadata.uid, uid);
}

describe("destructive writes over a lagging cache lose no live state", () => {
  describe("the release delete (step 6, hibernatePolicy release)", () => {
    function releasing(): ScalingHarness {
      const h = scalingHarness(scalingSet({ suspend: true, hibernatePolicy: "release" }, 2), (cs) => [
        hibernated(buildMainPod(cs), 2),
      ]);
      h.registry.put(VM0, TAG_HIBERNATE, IMAGE);
      return h;
    }

    it("keeps a main the cache shows hibernated while its VM runs again on the server", async () => {
      const h = releasing();
      // On the server: unsuspended (generation 3), woken by vk-cocoon, suspended again (generation 4).
      h.view.lagBehind(() => {
        const cs = h.set();
        h.client.seed(COCOONSETS, { ...cs, metadata: { ...cs.metadata, generation: 4 } });
        h.client.seed(PODS, woken(stored(h, "demo-0"), 3));
      });
      const uid = stored(h, "demo-0").metadata.uid;

      await reconcileSettling(h);

      assertAlive(h, "demo-0", uid);
      assert.ok(h.registry.has(VM0, TAG_HIBERNATE));
    });

    it("releases the seat when the server's main is hibernated too", async () => {
      const h = releasing();
      h.view.lagBehind(() => h.client.seed(PODS, stored(h, "demo-0")));

      await reconcileSettling(h);

      assert.deepEqual(h.deleted(), ["demo-0"]);
    });
  });

  it("the migration delete (step 8) keeps a main the cache shows quiesced that woke in place", async () => {
    const h = scalingHarness(withPhase(scalingSet({ nodeName: "node-b" }, 1), "Migrating"), (cs) => [
      hibernated(mainBuiltUnderPin(cs, undefined), 1, "node-a"),
    ]);
    h.registry.put(VM0, TAG_HIBERNATE, IMAGE);
    h.view.lagBehind(() => h.client.seed(PODS, woken(stored(h, "demo-0"), 1, "node-a")));

    await reconcileSettling(h);

    assertAlive(h, "demo-0");
  });

  it("step 8 keeps a main the cache shows unscheduled under an old pin that the server has bound and booted", async () => {
    const h = scalingHarness(scalingSet({ nodeName: "node-b" }, 1), (cs) => {
      const main = mainBuiltUnderPin(cs, "node-a");
      main.status = { phase: "Pending", conditions: [{ type: "PodScheduled", status: "False" }] };
      return [main];
    });
    h.view.lagBehind(() => h.client.seed(PODS, ready(stored(h, "demo-0"), "node-a")));

    await reconcileSettling(h);

    assertAlive(h, "demo-0");
  });

  describe("a rebuild delete (step 12)", () => {
    const set = () => scalingSet({ agent: { image: IMAGE, replicas: 1 } }, 1);

    it("keeps the replacement of a failed sub-agent the cache still shows", async () => {
      const h = scalingHarness(set(), (cs) => [
        ready(buildMainPod(cs)),
        phaseFailed(ready(buildSubAgentPod(cs, 1, "n"))),
      ]);
      h.view.lagBehind(() => {
        h.client.finishPodDeletion(NS, "demo-1");
        h.client.seed(PODS, ready(buildSubAgentPod(h.set(), 1, "n")));
      });
      const uid = stored(h, "demo-1").metadata.uid;

      await reconcileSettling(h);

      assertAlive(h, "demo-1", uid);
    });

    it("keeps a sub-agent the cache shows lifecycle-failed that vk-cocoon reports recovered", async () => {
      const h = scalingHarness(set(), (cs) => [
        ready(buildMainPod(cs)),
        lifecycleFailed(ready(buildSubAgentPod(cs, 1, "n"))),
      ]);
      h.view.lagBehind(() =>
        h.client.seed(PODS, annotate(stored(h, "demo-1"), { "vm.cocoonstack.io/lifecycle-state": "ready" })),
      );

      await reconcileSettling(h);

      assertAlive(h, "demo-1");
    });
  });

  it("the leftover-tag drop (step 8) keeps the snapshot of this controller's own quiesce", async () => {
    const h = scalingHarness(scalingSet({ nodeName: "node-b" }, 1), (cs) => [
      ready(mainBuiltUnderPin(cs, undefined), "node-a"),
    ]);
    // On the server a pass already persisted Migrating and quiesced the main; vk-cocoon pushed its snapshot.
    h.view.lagBehind(() => {
      h.client.seed(COCOONSETS, withPhase(h.set(), "Migrating"));
      h.client.seed(PODS, hibernated(stored(h, "demo-0"), 1, "node-a"));
      h.registry.put(VM0, TAG_HIBERNATE, IMAGE);
    });

    await reconcileSettling(h);

    assert.ok(h.registry.has(VM0, TAG_HIBERNATE));
    assertAlive(h, "demo-0");
  });

  it("the migration's snapshot drop (step 8) keeps the tag of a main quiesced again on the server", async () => {
    const h = scalingHarness(withPhase(scalingSet({ nodeName: "node-b" }, 1), "Migrating"), (cs) => [
      ready(buildMainPod(cs, { restore: true }), "node-b"),
    ]);
    h.registry.put(VM0, TAG_HIBERNATE, IMAGE);
    h.view.lagBehind(() => h.client.seed(PODS, hibernated(stored(h, "demo-0"), 1, "node-b")));

    await reconcileSettling(h);

    assert.ok(h.registry.has(VM0, TAG_HIBERNATE));
  });

  it("the wake's snapshot drop (step 9) keeps the tag of a woken main hibernated again on the server", async () => {
    const cs = withPhase(scalingSet({ hibernatePolicy: "release" }, 1), "Waking");
    cs.metadata.annotations = { [ANN_HIBERNATED_ON_NODE]: "node-a" };
    const h = scalingHarness(cs, (stored) => [
      woken(buildMainPod(stored, { restore: true, wakeHintNode: "node-a" }), 1),
    ]);
    h.registry.put(VM0, TAG_HIBERNATE, IMAGE);
    h.view.lagBehind(() => h.client.seed(PODS, hibernated(stored(h, "demo-0"), 1)));

    await reconcileSettling(h);

    assert.ok(h.registry.has(VM0, TAG_HIBERNATE));
  });

  it("the unsuspend's tag drop (step 10) keeps the tag of a VM hibernated again on the server", async () => {
    const cs = scalingSet({ agent: { image: IMAGE, replicas: 1 } }, 2);
    cs.metadata.annotations = { [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ generation: 2, vms: [VM0, VM1] }) };
    const h = scalingHarness(cs, (stored) => [
      woken(buildMainPod(stored), 2),
      woken(buildSubAgentPod(stored, 1, "node-a"), 2),
    ]);
    h.registry.put(VM0, TAG_HIBERNATE, IMAGE);
    h.registry.put(VM1, TAG_HIBERNATE, IMAGE);
    // On the server the sub-agent is hibernating again (a CocoonHibernation asked for it).
    h.view.lagBehind(() =>
      h.client.seed(PODS, annotate(hibernated(stored(h, "demo-1"), 2), { [ANN_HIBERNATE]: TRUE })),
    );

    await reconcileSettling(h);

    assert.ok(h.registry.has(VM1, TAG_HIBERNATE), "the hibernated sub-agent's snapshot is kept");
    assert.ok(!h.registry.has(VM0, TAG_HIBERNATE), "the main, woken on the server too, has its tag dropped");
  });
  it("a reclaim record rewritten over a cache that lacks the server's newer entry is refused, not written back", async () => {
    const cs = scalingSet({ agent: { image: IMAGE, replicas: 1 } }, 2);
    cs.metadata.annotations = { [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ generation: 2, vms: [VM0] }) };
    const h = scalingHarness(cs, (stored) => [woken(buildMainPod(stored), 2)]);
    h.registry.put(VM0, TAG_HIBERNATE, IMAGE);
    h.registry.put(VM1, TAG_HIBERNATE, IMAGE);
    // On the server the record has since taken the sub-agent, owed a restore from its snapshot.
    const newer = { generation: 2, vms: [VM0, VM1], restore: [VM1] };
    h.view.lagBehind(() => {
      const current = h.set();
      h.client.seed(COCOONSETS, {
        ...current,
        metadata: { ...current.metadata, annotations: { [ANN_HIBERNATE_RECLAIM]: JSON.stringify(newer) } },
      });
    });

    await reconcileSettling(h);

    const record = JSON.parse(h.set().metadata.annotations?.[ANN_HIBERNATE_RECLAIM] ?? "{}");
    assert.ok(record.vms?.includes(VM1), "the sub-agent stays recorded");
    assert.deepEqual(record.restore, [VM1], "the sub-agent is still owed its restore");
    assert.ok(h.registry.has(VM1, TAG_HIBERNATE));
  });
});
