import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonHibernation, CocoonSet, ToolboxSpec } from "../../../src/apis/v1/types.ts";
import { buildMainPod, buildSubAgentPod, buildToolboxPod } from "../../../src/cocoonset/decide/pods.ts";
import { invalidToolboxNames, reconcileToolboxes } from "../../../src/cocoonset/steps/toolboxes.ts";
import {
  ANN_DELETE_VM_NAMES,
  ANN_RESTORE_FROM_HIBERNATE,
  LABEL_ROLE,
  ROLE_SUB_AGENT,
} from "../../../src/contract/keys.ts";
import { COCOONHIBERNATIONS, PODS } from "../../../src/controller/resources.ts";
import {
  IMAGE,
  OTHER_IMAGE,
  phaseFailed,
  ready,
  type ScalingHarness,
  scalingHarness,
  scalingSet,
} from "../../support/scaling.ts";

const TB: ToolboxSpec = { name: "tb", image: IMAGE };
const STATIC_TB: ToolboxSpec = {
  name: "vnc",
  mode: "static",
  staticIP: "10.0.0.1",
  staticVMID: "qemu-1",
  vncPort: 5901,
};

function set(toolboxes: ToolboxSpec[]): CocoonSet {
  return scalingSet({ agent: { image: IMAGE, replicas: 0 }, toolboxes });
}

function withPods(cs: CocoonSet, pods: (stored: CocoonSet) => Pod[] = () => []): ScalingHarness {
  return scalingHarness(cs, (stored) => [ready(buildMainPod(stored)), ...pods(stored)]);
}

function writes(h: ScalingHarness): string[] {
  return h.client.writes().map((c) => `${c.verb} ${c.resource}/${c.name}`);
}

describe("step 13: toolboxes", () => {
  it('a toolbox named "0" is an error before any write, even with demo-0 present', async () => {
    const h = withPods(set([{ name: "0", image: IMAGE }]));
    await assert.rejects(reconcileToolboxes(h.pass()), /must not be an integer/);
    assert.deepEqual(h.client.calls, []);
    assert.deepEqual(h.registry.calls, []);
  });

  it("an integer name and a duplicate name are errors before any write", async () => {
    const integer = withPods(set([TB, { name: "1", image: IMAGE }]));
    await assert.rejects(reconcileToolboxes(integer.pass()), /must not be an integer/);
    assert.deepEqual(integer.client.calls, []);
    const duplicate = withPods(set([TB, { name: "tb", image: IMAGE }]));
    await assert.rejects(reconcileToolboxes(duplicate.pass()), /duplicate toolbox name "tb"/);
    assert.deepEqual(duplicate.client.calls, []);
  });

  it("reads names the way Go's strconv.Atoi does", () => {
    assert.match(invalidToolboxNames([{ name: "007", image: IMAGE }]) ?? "", /integer/);
    assert.match(invalidToolboxNames([{ name: "+3", image: IMAGE }]) ?? "", /integer/);
    assert.equal(invalidToolboxNames([{ name: "db-0", image: IMAGE }, TB]), undefined);
  });

  it("creates a missing managed toolbox under the image rule", async () => {
    const h = withPods(set([TB]));
    const pass = h.pass();
    await reconcileToolboxes(pass);
    assert.deepEqual(h.created(), ["demo-tb"]);
    assert.deepEqual(h.registry.callsOf("getSnapshot"), ["vk-ns-demo-tb:hibernate"]);
    assert.equal(pass.changed, true);
  });

  it("a static toolbox is created without a manifest read", async () => {
    const h = withPods(set([STATIC_TB]));
    await reconcileToolboxes(h.pass());
    assert.deepEqual(h.created(), ["demo-vnc"]);
    assert.deepEqual(h.registry.calls, []);
  });

  it("a toolbox a Hibernated CocoonHibernation names is restore-marked when its tag exists", async () => {
    const h = withPods(set([TB]));
    const ch: CocoonHibernation = {
      apiVersion: "cocoonset.cocoonstack.io/v1",
      kind: "CocoonHibernation",
      metadata: { name: "demo-tb", namespace: "ns" },
      spec: { podRef: { name: "demo-tb" }, desire: "Hibernate" },
      status: { phase: "Hibernated" },
    };
    h.client.seed(COCOONHIBERNATIONS, ch);
    h.registry.put("vk-ns-demo-tb", "hibernate", IMAGE);
    await reconcileToolboxes(h.pass());
    assert.equal(h.pod("demo-tb")?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], "true");
  });

  it("a toolbox tag from another image is deleted before the toolbox is created fresh", async () => {
    const h = withPods(set([TB]));
    const digest = h.registry.put("vk-ns-demo-tb", "hibernate", OTHER_IMAGE);
    await reconcileToolboxes(h.pass());
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), [`vk-ns-demo-tb:hibernate@${digest}`]);
    assert.equal(h.pod("demo-tb")?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], undefined);
  });

  it("AlreadyExists for a toolbox the cache missed: an uncached GET finds it ours, no error", async () => {
    const h = withPods(set([TB]));
    const stored = h.set();
    // Created by an earlier pass; the cache has not caught up.
    const listSetPods = h.view.listSetPods.bind(h.view);
    h.view.listSetPods = (ns, name) => listSetPods(ns, name).filter((p) => p.metadata.name !== "demo-tb");
    h.seedPods(buildToolboxPod(stored, TB));
    const pass = h.pass();
    await reconcileToolboxes(pass);
    assert.deepEqual(
      h.client.calls.map((c) => `${c.verb} ${c.resource}/${c.name}`),
      ["create pods/demo-tb", "get pods/demo-tb"],
    );
    assert.equal(pass.changed, false);
  });

  it("AlreadyExists for a pod that is not our toolbox is a collision error", async () => {
    const h = withPods(set([TB]));
    const stranger = buildToolboxPod(h.set(), TB);
    stranger.metadata.labels = {};
    stranger.metadata.ownerReferences = [];
    h.seedPods(stranger);
    await assert.rejects(reconcileToolboxes(h.pass()), /name collision with existing pod ns\/demo-tb/);
  });

  it("an owned pod `<cs>-<tb>` of another role is a collision error", async () => {
    const h = withPods(set([TB]), (stored) => {
      const pod = buildSubAgentPod(stored, 1, "node-a");
      pod.metadata.name = "demo-tb";
      pod.metadata.labels = { ...pod.metadata.labels, [LABEL_ROLE]: ROLE_SUB_AGENT };
      return [pod];
    });
    await assert.rejects(reconcileToolboxes(h.pass()), /name collision/);
    assert.deepEqual(h.client.writes(), []);
  });

  it("a toolbox in phase Failed is deleted for rebuild, history first", async () => {
    const h = withPods(set([TB]), (stored) => [phaseFailed(ready(buildToolboxPod(stored, TB)))]);
    await reconcileToolboxes(h.pass());
    assert.deepEqual(writes(h), ["patch cocoonsets/demo", "delete pods/demo-tb"]);
    assert.equal(h.events.events[0]?.message, "demo-tb attempt 1/4");
  });

  it("a drifted toolbox is deleted for rebuild", async () => {
    const h = withPods(set([{ ...TB, image: OTHER_IMAGE }]), (stored) => [
      ready(buildToolboxPod(stored, TB)),
    ]);
    await reconcileToolboxes(h.pass());
    assert.deepEqual(h.deleted(), ["demo-tb"]);
  });

  it("a settled toolbox makes no call", async () => {
    const h = withPods(set([TB, STATIC_TB]), (stored) => [
      ready(buildToolboxPod(stored, TB)),
      ready(buildToolboxPod(stored, STATIC_TB)),
    ]);
    const pass = h.pass();
    await reconcileToolboxes(pass);
    assert.deepEqual(h.client.calls, []);
    assert.equal(pass.changed, false);
  });

  it("toolboxes left out of the spec go, in name order, after their VM names are stashed", async () => {
    const old = set([TB, { name: "db", image: IMAGE }, { name: "web", image: IMAGE }]);
    const h = scalingHarness(set([TB]), () => [
      ready(buildMainPod(old)),
      ready(buildToolboxPod(old, TB)),
      ready(buildToolboxPod(old, { name: "web", image: IMAGE })),
      ready(buildToolboxPod(old, { name: "db", image: IMAGE })),
    ]);
    const pass = h.pass();
    await reconcileToolboxes(pass);
    assert.deepEqual(writes(h), ["patch cocoonsets/demo", "delete pods/demo-db", "delete pods/demo-web"]);
    assert.equal(h.set().metadata.annotations?.[ANN_DELETE_VM_NAMES], "vk-ns-demo-db,vk-ns-demo-web");
    assert.equal(pass.changed, true);
    assert.equal(h.client.peek<Pod>(PODS, "ns", "demo-tb")?.metadata.deletionTimestamp, undefined);
  });
});
