import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import {
  describeMismatches,
  podRestoreDependencies,
  restoreMismatches,
  specRestoreDependencies,
} from "../../../src/contract/restoredeps.ts";

const set = (spec: Partial<CocoonSet["spec"]>): CocoonSet => ({
  apiVersion: "cocoonset.cocoonstack.io/v1",
  kind: "CocoonSet",
  metadata: { name: "demo", namespace: "ns" },
  spec: { agent: { image: "ubuntu" }, ...spec },
});

describe("restore dependencies", () => {
  it("a pod's are its image, defaulted backend and OS, and the class it selects", () => {
    assert.deepEqual(
      podRestoreDependencies({
        metadata: { annotations: { "cocoonset.cocoonstack.io/image": "ubuntu" } },
        spec: { nodeSelector: { "cocoonstack.io/snapshot-cpu-class": "n2-v1" } },
      }),
      { image: "ubuntu", backend: "cloud-hypervisor", os: "linux", snapshotCompatibilityClass: "n2-v1" },
    );
    assert.deepEqual(
      podRestoreDependencies({
        metadata: {
          annotations: {
            "vm.cocoonstack.io/backend": "firecracker",
            "cocoonset.cocoonstack.io/os": "windows",
          },
        },
      }),
      { image: "", backend: "firecracker", os: "windows", snapshotCompatibilityClass: "" },
    );
  });

  it("the spec's are the agent's for every agent slot and the named toolbox's, with the set's class", () => {
    const cs = set({
      snapshotCompatibilityClass: "n2-v1",
      agent: { image: "ubuntu", backend: "firecracker" },
      toolboxes: [{ name: "db", image: "pg", os: "windows" }],
    });
    assert.deepEqual(specRestoreDependencies(cs, { role: "sub-agent" }), {
      image: "ubuntu",
      backend: "firecracker",
      os: "linux",
      snapshotCompatibilityClass: "n2-v1",
    });
    assert.deepEqual(specRestoreDependencies(cs, { role: "toolbox", toolbox: "db" }), {
      image: "pg",
      backend: "cloud-hypervisor",
      os: "windows",
      snapshotCompatibilityClass: "n2-v1",
    });
    assert.equal(specRestoreDependencies(cs, { role: "toolbox", toolbox: "gone" }), undefined);
  });

  it("mismatches come in one fixed field order, limited to the fields asked about, and read as a sentence", () => {
    const taken = { image: "a", backend: "cloud-hypervisor", os: "linux", snapshotCompatibilityClass: "" };
    const wanted = { image: "b", backend: "firecracker", os: "linux", snapshotCompatibilityClass: "n2" };
    const all = restoreMismatches(taken, wanted);
    assert.deepEqual(
      all.map((m) => m.field),
      ["image", "backend", "snapshotCompatibilityClass"],
    );
    assert.deepEqual(
      restoreMismatches(taken, wanted, ["snapshotCompatibilityClass", "backend"]).map((m) => m.field),
      ["backend", "snapshotCompatibilityClass"],
    );
    assert.deepEqual(restoreMismatches(taken, taken), []);
    assert.equal(
      describeMismatches(all),
      "image a (the spec asks for b), backend cloud-hypervisor (the spec asks for firecracker), snapshotCompatibilityClass (none) (the spec asks for n2)",
    );
  });
});
