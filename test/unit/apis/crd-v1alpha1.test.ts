// The CocoonCheckpoint CRD (docs/checkpoints.md): generated from src/apis/v1alpha1 like the v1 CRDs,
// in its own file, served as v1alpha1 only; the v1 CRDs stay exactly the reference superset they were.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { renderCRDs } from "../../../src/apis/v1/render.ts";
import { cocoonCheckpointCRD, v1alpha1CrdFiles } from "../../../src/apis/v1alpha1/schema.ts";

const root = join(import.meta.dirname, "..", "..", "..");

describe("CocoonCheckpoint CRD", () => {
  it("the committed config/crd/bases file equals the generated output", async () => {
    for (const { file, yaml } of renderCRDs(v1alpha1CrdFiles)) {
      const committed = await readFile(join(root, "config", "crd", "bases", file), "utf8");
      assert.equal(committed, yaml, `${file} is stale: run npm run gen:crds`);
    }
  });

  it("is namespaced, group cocoonset.cocoonstack.io, version v1alpha1 with a status subresource", () => {
    const { spec } = cocoonCheckpointCRD;
    assert.equal(spec.group, "cocoonset.cocoonstack.io");
    assert.equal(spec.scope, "Namespaced");
    assert.deepEqual(
      spec.versions.map((v) => [v.name, v.served, v.storage, v.subresources]),
      [["v1alpha1", true, true, { status: {} }]],
    );
  });

  it("limits the name to what the tag ckpt-<name> allows and freezes the spec", () => {
    const schema = cocoonCheckpointCRD.spec.versions[0]?.schema.openAPIV3Schema;
    assert.deepEqual(
      schema?.["x-kubernetes-validations"]?.map((r) => r.rule),
      ["size(self.metadata.name) <= 123"],
    );
    assert.deepEqual(schema?.properties?.spec?.["x-kubernetes-validations"], [
      { message: "spec is immutable", rule: "self == oldSelf" },
    ]);
  });
});
