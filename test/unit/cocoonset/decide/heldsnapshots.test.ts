import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../../src/apis/core.ts";
import type { CocoonSet } from "../../../../src/apis/v1/types.ts";
import {
  heldReleasedSnapshots,
  heldSnapshots,
  heldSnapshotsMessage,
  REASON_SNAPSHOT_INCOMPATIBLE,
} from "../../../../src/cocoonset/decide/heldsnapshots.ts";
import { buildMainPod, buildSubAgentPod, buildToolboxPod } from "../../../../src/cocoonset/decide/pods.ts";
import { LABEL_SNAPSHOT_CPU_CLASS } from "../../../../src/contract/keys.ts";
import { classifyPods } from "../../../../src/pass/classify.ts";
import { EMPTY_RECLAIM, type ReclaimRecord, recordReleased } from "../../../../src/pass/reclaimrecord.ts";
import { IMAGE, OTHER_IMAGE, phaseFailed, scalingSet } from "../../../support/scaling.ts";
import { hibernated } from "../../../support/suspend.ts";

const TOOLBOX = { name: "db", image: "pg", mode: "run" };

/** The set as suspended (cloud-hypervisor, linux, no class) and its hibernated pods. */
function suspended(): { before: CocoonSet; pods: Pod[] } {
  const before = scalingSet({ agent: { image: IMAGE, replicas: 1 }, toolboxes: [TOOLBOX] });
  const pods = [
    buildMainPod(before),
    buildSubAgentPod(before, 1, "node-a"),
    buildToolboxPod(before, TOOLBOX),
  ].map((pod) => hibernated(pod, 1));
  return { before, pods };
}

function held(after: CocoonSet, pods: Pod[]) {
  return heldSnapshots(after, classifyPods(pods, { name: "demo", uid: after.metadata.uid ?? "" }));
}

function edited(before: CocoonSet, spec: Partial<CocoonSet["spec"]>): CocoonSet {
  return { ...before, spec: { ...before.spec, ...spec } };
}

describe("snapshots a suspended set's edit would strand", () => {
  it("a backend edit holds every agent and toolbox snapshot, naming both backends and what to set back", () => {
    const { before, pods } = suspended();
    const after = edited(before, {
      agent: { image: IMAGE, replicas: 1, backend: "firecracker" },
      toolboxes: [{ ...TOOLBOX, backend: "firecracker" }],
    });
    const found = held(after, pods);
    assert.deepEqual(
      found.map((h) => `${h.vmName} ${h.mismatches.map((m) => `${m.field}:${m.taken}->${m.wanted}`)}`),
      [
        "vk-ns-demo-0 backend:cloud-hypervisor->firecracker",
        "vk-ns-demo-1 backend:cloud-hypervisor->firecracker",
        "vk-ns-demo-db backend:cloud-hypervisor->firecracker",
      ],
    );
    const message = heldSnapshotsMessage(found);
    assert.match(
      message,
      /VM vk-ns-demo-0 of pod ns\/demo-0 was snapshotted under backend cloud-hypervisor \(the spec asks for firecracker\)/,
    );
    assert.match(
      message,
      /The snapshots are kept: set spec\.agent\.backend back to cloud-hypervisor, spec\.toolboxes\[db\]\.backend back to cloud-hypervisor and the set resumes with its state$/,
    );
  });

  it("an OS edit is held; an image edit is not (the image rule gives that snapshot up)", () => {
    const { before, pods } = suspended();
    const os = held(edited(before, { agent: { image: IMAGE, replicas: 1, os: "windows" } }), pods);
    assert.deepEqual(
      os.map((h) => h.vmName),
      ["vk-ns-demo-0", "vk-ns-demo-1"],
    );
    assert.deepEqual(held(edited(before, { agent: { image: OTHER_IMAGE, replicas: 1 } }), pods), []);
  });

  it("a class set on a set whose pods select none is not held while they live (adopted), but is for a failed one", () => {
    const { before, pods } = suspended();
    const after = edited(before, { snapshotCompatibilityClass: "n2-v1" });
    assert.deepEqual(held(after, pods), []);
    const [main, ...rest] = pods;
    assert.ok(main);
    assert.deepEqual(
      held(after, [phaseFailed(main), ...rest]).map((h) => `${h.vmName} ${h.mismatches[0]?.field}`),
      ["vk-ns-demo-0 snapshotCompatibilityClass"],
    );
    const classed = buildMainPod(edited(before, { snapshotCompatibilityClass: "n4-v1" }));
    assert.equal(classed.spec.nodeSelector?.[LABEL_SNAPSHOT_CPU_CLASS], "n4-v1");
    assert.deepEqual(
      held(after, [hibernated(classed, 1)]).map((h) => h.mismatches),
      [[{ field: "snapshotCompatibilityClass", taken: "n4-v1", wanted: "n2-v1" }]],
    );
  });

  it("pods not hibernated, slots scaled away and toolboxes the spec dropped are not held", () => {
    const { before, pods } = suspended();
    const awake = pods.map((pod) => {
      const { "vm.cocoonstack.io/hibernate": _flag, ...annotations } = pod.metadata.annotations ?? {};
      return { ...pod, metadata: { ...pod.metadata, annotations } };
    });
    const firecracker = { image: IMAGE, replicas: 1, backend: "firecracker" };
    assert.deepEqual(held(edited(before, { agent: firecracker, toolboxes: [] }), awake), []);
    assert.deepEqual(
      held(edited(before, { agent: { ...firecracker, replicas: 0 }, toolboxes: [] }), pods).map(
        (h) => h.vmName,
      ),
      ["vk-ns-demo-0"],
    );
  });
});

describe("held snapshots: order, names and what to set back", () => {
  it("the Ready reason and Warning of a held edit is SnapshotIncompatible, as documented", () => {
    assert.equal(REASON_SNAPSHOT_INCOMPATIBLE, "SnapshotIncompatible");
  });

  it("are listed by VM name whatever order the pods come in, so the message does not flap", () => {
    const { before, pods } = suspended();
    const after = edited(before, {
      agent: { image: IMAGE, replicas: 1, backend: "firecracker" },
      toolboxes: [{ ...TOOLBOX, backend: "firecracker" }],
    });
    assert.deepEqual(
      held(after, [...pods].reverse()).map((h) => h.vmName),
      ["vk-ns-demo-0", "vk-ns-demo-1", "vk-ns-demo-db"],
    );
  });

  it("a toolbox whose name reads as a number in JavaScript (0x10) is held like any toolbox", () => {
    const hex = { ...TOOLBOX, name: "0x10" };
    const before = scalingSet({ agent: { image: IMAGE, replicas: 0 }, toolboxes: [hex] });
    const pods = [hibernated(buildToolboxPod(before, hex), 1)];
    const after = edited(before, { toolboxes: [{ ...hex, backend: "firecracker" }] });
    assert.deepEqual(
      held(after, pods).map((h) => h.vmName),
      ["vk-ns-demo-0x10"],
    );
  });

  it("a class mismatch tells to set spec.snapshotCompatibilityClass back", () => {
    const { before } = suspended();
    const classed = hibernated(buildMainPod(edited(before, { snapshotCompatibilityClass: "n4-v1" })), 1);
    const message = heldSnapshotsMessage(
      held(edited(before, { snapshotCompatibilityClass: "n2-v1" }), [classed]),
    );
    assert.match(message, /set spec\.snapshotCompatibilityClass back to n4-v1 and the set resumes/);
  });
});

describe("snapshots of released VMs (pods a release suspend deleted) an edit would strand", () => {
  const VM0 = "vk-ns-demo-0";
  const CH = { backend: "cloud-hypervisor", os: "linux", snapshotCompatibilityClass: "" };
  const released = scalingSet({ hibernatePolicy: "release", agent: { image: IMAGE, replicas: 0 } });

  function record(under: typeof CH = CH): ReclaimRecord {
    return recordReleased({ ...EMPTY_RECLAIM, vms: [VM0], suspended: [VM0] }, { [VM0]: under });
  }

  function heldReleased(after: CocoonSet, pods: Pod[] = [], rec = record()) {
    return heldReleasedSnapshots(
      after,
      classifyPods(pods, { name: "demo", uid: after.metadata.uid ?? "" }),
      rec,
    );
  }

  const agent = (options: Record<string, string>) => ({ agent: { image: IMAGE, replicas: 0, ...options } });

  it("a backend or OS edit is held against what the record says, naming the wake's pod and what to set back", () => {
    const found = heldReleased(edited(released, agent({ backend: "firecracker" })));
    assert.deepEqual(
      found.map(
        (h) => `${h.vmName} ${h.podKey} ${h.mismatches.map((m) => `${m.field}:${m.taken}->${m.wanted}`)}`,
      ),
      ["vk-ns-demo-0 ns/demo-0 backend:cloud-hypervisor->firecracker"],
    );
    assert.equal(
      heldSnapshotsMessage(found),
      "vk-cocoon cannot restore the snapshots as the spec now asks: VM vk-ns-demo-0 of pod ns/demo-0 was snapshotted under backend cloud-hypervisor (the spec asks for firecracker). The snapshots are kept: set spec.agent.backend back to cloud-hypervisor and the set resumes with its state",
    );
    assert.deepEqual(
      heldReleased(edited(released, agent({ os: "windows" }))).map((h) => h.mismatches),
      [[{ field: "os", taken: "linux", wanted: "windows" }]],
    );
  });

  it("a class the snapshot was taken under is held; a class set where none was recorded is not (it cannot be set back)", () => {
    const n2 = { ...CH, snapshotCompatibilityClass: "n2-v1" };
    assert.deepEqual(
      heldReleased(edited(released, { snapshotCompatibilityClass: "n4-v1" }), [], record(n2)).map(
        (h) => h.mismatches,
      ),
      [[{ field: "snapshotCompatibilityClass", taken: "n2-v1", wanted: "n4-v1" }]],
    );
    assert.deepEqual(heldReleased(edited(released, { snapshotCompatibilityClass: "n4-v1" })), []);
  });

  it("the spec unchanged, or set back, holds nothing; an image edit is the image rule's", () => {
    assert.deepEqual(heldReleased(released), []);
    assert.deepEqual(heldReleased(edited(released, agent({ backend: "cloud-hypervisor" }))), []);
    assert.deepEqual(heldReleased(edited(released, { agent: { image: OTHER_IMAGE, replicas: 0 } })), []);
  });

  it("nothing recorded (a Go operator's record, an older one's) holds nothing", () => {
    const edit = edited(released, agent({ backend: "firecracker" }));
    assert.deepEqual(heldReleased(edit, [], { ...EMPTY_RECLAIM, vms: [VM0], suspended: [VM0] }), []);
  });

  it("a VM whose pod is back, or still terminating, is its pod's to judge", () => {
    const edit = edited(released, agent({ backend: "firecracker" }));
    const pod = buildMainPod(released);
    assert.deepEqual(heldReleased(edit, [pod]), []);
    const terminating = { ...pod, metadata: { ...pod.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" } };
    assert.deepEqual(heldReleased(edit, [terminating]), []);
  });
});
