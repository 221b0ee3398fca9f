// Which VMs a checkpoint holds, which a branch copies, and which checkpoints keep-checkpoints prunes.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CheckpointMember, CocoonCheckpoint } from "../../../src/apis/v1alpha1/types.ts";
import { MANIFEST_ANN_CHECKPOINT, MANIFEST_ANN_WRITE } from "../../../src/checkpoint/keys.ts";
import { checkpointManifest } from "../../../src/checkpoint/manifest.ts";
import { incompatibleCopies, planBranch, setSlots } from "../../../src/checkpoint/members.ts";
import { checkpointsToPrune, parseKeepCheckpoints } from "../../../src/checkpoint/prune.ts";
import { cocoonSet, NS } from "../../support/cocoonset.ts";

function checkpointOf(
  members: CheckpointMember[],
  meta: Partial<CocoonCheckpoint["metadata"]> = {},
): CocoonCheckpoint {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonCheckpoint",
    metadata: { name: "ck", namespace: NS, ...meta },
    spec: { cocoonSetRef: { name: "src" } },
    status: { phase: "Ready", members },
  };
}

describe("setSlots", () => {
  it("is the main, every sub-agent slot and every managed toolbox, never a static one", () => {
    const cs = cocoonSet({
      agent: { image: "i", replicas: 2 },
      toolboxes: [
        { name: "run", image: "i", mode: "run" },
        { name: "fixed", mode: "static", staticIP: "10.0.0.1", staticVMID: "v" },
      ],
    });
    assert.deepEqual(setSlots(cs), [
      { role: "main", slot: 0, vmName: "vk-ns-demo-0" },
      { role: "sub-agent", slot: 1, vmName: "vk-ns-demo-1" },
      { role: "sub-agent", slot: 2, vmName: "vk-ns-demo-2" },
      { role: "toolbox", toolbox: "run", vmName: "vk-ns-demo-run" },
    ]);
  });
});

describe("setSlots without toolboxes", () => {
  it("is the main and every sub-agent slot alone", () => {
    assert.deepEqual(
      setSlots(cocoonSet({ agent: { image: "i", replicas: 1 } })).map((s) => s.vmName),
      ["vk-ns-demo-0", "vk-ns-demo-1"],
    );
  });
});

describe("planBranch", () => {
  const members: CheckpointMember[] = [
    { role: "main", slot: 0, vmName: "vk-ns-src-0", digest: "sha256:0" },
    { role: "sub-agent", slot: 1, vmName: "vk-ns-src-1", digest: "sha256:1" },
    { role: "sub-agent", slot: 3, vmName: "vk-ns-src-3", digest: "sha256:3" },
    { role: "toolbox", toolbox: "web", vmName: "vk-ns-src-web", digest: "sha256:w" },
    { role: "toolbox", toolbox: "never-copied", vmName: "vk-ns-src-never-copied" },
  ];

  it("pairs each slot of the new spec with the member in the same place; the rest boot as usual", () => {
    const cs = cocoonSet({
      agent: { image: "i", replicas: 2 },
      toolboxes: [
        { name: "web", image: "i" },
        { name: "never-copied", image: "i" },
        { name: "1", image: "i" },
      ],
    });
    assert.deepEqual(
      planBranch(cs, checkpointOf(members)).map((c) => [c.member.vmName, c.targetVM]),
      [
        ["vk-ns-src-0", "vk-ns-demo-0"],
        ["vk-ns-src-1", "vk-ns-demo-1"],
        ["vk-ns-src-web", "vk-ns-demo-web"],
      ],
      "slot 2 and toolbox '1' are not in the checkpoint, slot 3 not in the spec, a member without digest holds nothing",
    );
  });
});

describe("checkpointManifest", () => {
  it("keeps every field and adds the checkpoint's stamps, so its digest is its own", () => {
    const raw = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        layers: [{ digest: "sha256:a" }],
        annotations: { "cocoonstack.snapshot.baseimage": "img" },
      }),
    );
    const ck = { namespace: "ns", name: "ck", uid: "uid-ck" };
    const copy = JSON.parse(checkpointManifest(raw, ck).toString("utf8"));
    assert.deepEqual(copy, {
      schemaVersion: 2,
      layers: [{ digest: "sha256:a" }],
      annotations: {
        "cocoonstack.snapshot.baseimage": "img",
        [MANIFEST_ANN_CHECKPOINT]: "ns/ck",
        [MANIFEST_ANN_WRITE]: "uid-ck",
      },
    });
    assert.notDeepEqual(checkpointManifest(raw, { ...ck, name: "other" }), checkpointManifest(raw, ck));
    assert.notDeepEqual(
      checkpointManifest(raw, { ...ck, uid: "uid-ck-recreated" }),
      checkpointManifest(raw, ck),
      "a checkpoint re-created under the same name writes other bytes",
    );
    assert.deepEqual(
      checkpointManifest(raw, ck),
      checkpointManifest(raw, ck),
      "a retry writes the same bytes",
    );
  });
});

describe("keep-checkpoints", () => {
  it("takes a positive integer only", () => {
    assert.equal(parseKeepCheckpoints("3"), 3);
    assert.equal(parseKeepCheckpoints("12"), 12);
    assert.equal(parseKeepCheckpoints("100"), 100);
    for (const bad of ["0", "-1", "01", "two", "", "1.5", " 2"])
      assert.equal(parseKeepCheckpoints(bad), undefined, bad);
  });

  it("prunes the Ready checkpoints beyond the N newest, leaving Pending and deleting ones alone", () => {
    const at = (name: string, time: string, phase: "Ready" | "Pending" = "Ready", deleting = false) => ({
      ...checkpointOf([], {
        name,
        creationTimestamp: time,
        ...(deleting ? { deletionTimestamp: time } : {}),
      }),
      status: { phase },
    });
    const all = [
      at("a", "2026-01-01T00:00:01Z"),
      at("b", "2026-01-01T00:00:02Z"),
      at("c", "2026-01-01T00:00:02Z"),
      at("d", "2026-01-01T00:00:03Z", "Pending"),
      at("e", "2026-01-01T00:00:00Z", "Ready", true),
    ];
    assert.deepEqual(
      checkpointsToPrune(all, 1).map((c) => c.metadata.name),
      ["b", "a"],
      "same second: the later name counts as newer",
    );
  });
});

describe("keep-checkpoints order", () => {
  const at = (name: string, time: string) => ({
    ...checkpointOf([], { name, creationTimestamp: time }),
    status: { phase: "Ready" as const },
  });
  const newestFirst = [
    at("d", "2026-01-01T00:00:03Z"),
    at("c2", "2026-01-01T00:00:02Z"),
    at("c1", "2026-01-01T00:00:02Z"),
    at("a", "2026-01-01T00:00:01Z"),
  ];

  it("keeps the newest by creation time, then by name, whatever order the cache lists them in", () => {
    const permutations = (items: CocoonCheckpoint[]): CocoonCheckpoint[][] =>
      items.length <= 1
        ? [items]
        : items.flatMap((item, i) =>
            permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
          );
    for (const listed of permutations(newestFirst)) {
      const order = listed.map((c) => c.metadata.name).join(",");
      assert.deepEqual(
        checkpointsToPrune(listed, 1).map((c) => c.metadata.name),
        ["c2", "c1", "a"],
        order,
      );
      assert.deepEqual(
        checkpointsToPrune(listed, 2).map((c) => c.metadata.name),
        ["c1", "a"],
        order,
      );
    }
  });

  it("a checkpoint without a status yet is neither pruned nor counted", () => {
    const fresh = { ...checkpointOf([], { name: "fresh", creationTimestamp: "2026-01-01T00:00:09Z" }) };
    delete fresh.status;
    assert.deepEqual(
      checkpointsToPrune([fresh, ...newestFirst], 3).map((c) => c.metadata.name),
      ["a"],
    );
  });
});

describe("incompatibleCopies", () => {
  const main = (extra: Partial<CheckpointMember>): CheckpointMember => ({
    role: "main",
    slot: 0,
    vmName: "vk-ns-src-0",
    digest: "sha256:a",
    ...extra,
  });
  const fields = (cs: ReturnType<typeof cocoonSet>, member: CheckpointMember) =>
    incompatibleCopies(cs, planBranch(cs, checkpointOf([member]))).flatMap((c) =>
      c.mismatches.map((m) => `${m.field}:${m.taken}->${m.wanted}`),
    );

  it("compares every field the member records with what the slot's spec asks", () => {
    const cs = cocoonSet({
      agent: { image: "i2", backend: "firecracker", mode: "run" },
      snapshotCompatibilityClass: "n2-v1",
    });
    const recorded = main({
      image: "i",
      backend: "cloud-hypervisor",
      os: "linux",
      snapshotCompatibilityClass: "",
    });
    assert.deepEqual(fields(cs, recorded), [
      "image:i->i2",
      "backend:cloud-hypervisor->firecracker",
      "snapshotCompatibilityClass:->n2-v1",
    ]);
  });

  it("an empty image leaves the other fields compared", () => {
    const cs = cocoonSet({ agent: { image: "i2", backend: "firecracker", mode: "run" } });
    assert.deepEqual(fields(cs, main({ image: "", backend: "cloud-hypervisor" })), [
      "backend:cloud-hypervisor->firecracker",
    ]);
  });

  it("a field the member does not record, or an empty image, is not compared", () => {
    const cs = cocoonSet({ agent: { image: "i2", backend: "firecracker", mode: "run" } });
    assert.deepEqual(fields(cs, main({ image: "" })), []);
    assert.deepEqual(fields(cs, main({ image: "i2", os: "linux" })), []);
  });
});
