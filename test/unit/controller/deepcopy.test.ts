import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { deepCopyJson } from "../../../src/controller/deepcopy.ts";

describe("deepCopyJson", () => {
  it("copies nested objects and arrays so that writes to the copy leave the original alone", () => {
    const original = {
      metadata: { name: "a", labels: { app: "x" }, finalizers: ["f"] },
      spec: { containers: [{ name: "c", env: [{ name: "E", value: "1" }] }] },
    };
    const copy = deepCopyJson(original);
    assert.deepEqual(copy, original);
    copy.metadata.labels.app = "y";
    copy.metadata.finalizers.push("g");
    const env = copy.spec.containers[0]?.env[0];
    if (env) env.value = "2";
    assert.equal(original.metadata.labels.app, "x");
    assert.deepEqual(original.metadata.finalizers, ["f"]);
    assert.equal(original.spec.containers[0]?.env[0]?.value, "1");
  });

  it("keeps property order, undefined properties, null and primitives", () => {
    const copy = deepCopyJson({ b: 1, a: undefined, c: null, d: "s", e: true, f: [1, null] });
    assert.deepEqual(Object.keys(copy), ["b", "a", "c", "d", "e", "f"]);
    assert.ok("a" in copy);
    assert.deepEqual(copy, { b: 1, a: undefined, c: null, d: "s", e: true, f: [1, null] });
  });

  it('copies a decoded "__proto__" key as an own property, not as the prototype', () => {
    const decoded = JSON.parse('{"spec":{"__proto__":{"polluted":true}}}') as { spec: object };
    const copy = deepCopyJson(decoded);
    assert.equal(Object.getPrototypeOf(copy.spec), Object.prototype);
    assert.deepEqual(Object.getOwnPropertyDescriptor(copy.spec, "__proto__")?.value, { polluted: true });
    assert.equal((copy.spec as { polluted?: boolean }).polluted, undefined);
  });
});
