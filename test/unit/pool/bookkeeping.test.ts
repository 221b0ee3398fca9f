// The operator's bookkeeping keys: a pool member never takes one from its template, and the admission
// policy shipped in config/policy guards exactly these keys.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import { ANN_DELETE_VM_NAMES, ANN_HIBERNATE_RECLAIM } from "../../../src/contract/keys.ts";
import { ANN_GUEST_HOOKS } from "../../../src/guest/keys.ts";
import { BOOKKEEPING_KEYS } from "../../../src/pool/bookkeeping.ts";
import { newMember, templateHash } from "../../../src/pool/decide.ts";
import { ANN_POOL_TEMPLATE, LABEL_POOL } from "../../../src/pool/keys.ts";
import { cocoonPool } from "../../support/pool.ts";

describe("pool members and the bookkeeping keys", () => {
  it("a member takes none of its template's bookkeeping annotations or labels", () => {
    const carried = Object.fromEntries(BOOKKEEPING_KEYS.map((key) => [key, "copied"]));
    const pool = cocoonPool({
      template: {
        metadata: {
          labels: { team: "a", ...carried },
          annotations: {
            note: "x",
            ...carried,
            [ANN_DELETE_VM_NAMES]: "vk-b-prod-0",
            [ANN_HIBERNATE_RECLAIM]: '{"generation":1,"vms":["vk-b-prod-0"]}',
          },
        },
        spec: { agent: { image: "ubuntu" } },
      },
    });
    const cs = newMember(pool, "warm-abcde");
    assert.deepEqual(cs.metadata.labels, { team: "a", [LABEL_POOL]: "warm" });
    assert.deepEqual(cs.metadata.annotations, { note: "x", [ANN_POOL_TEMPLATE]: templateHash(pool) });
  });
});

describe("config/policy/bookkeeping-policy.yaml", () => {
  const docs = parseAllDocuments(
    readFileSync(resolve(import.meta.dirname, "../../../config/policy/bookkeeping-policy.yaml"), "utf8"),
  ).map((d) => d.toJS());
  const policy = (name: string) =>
    docs.find((d) => d.kind === "ValidatingAdmissionPolicy" && d.metadata.name === name);
  const guarded = (name: string) => {
    const keys = policy(name).spec.variables.find((v: { name: string }) => v.name === "keys").expression;
    return [...(keys as string).matchAll(/'([^']+)'/g)].map((m) => m[1]).sort();
  };

  it("guards exactly the operator's bookkeeping keys", () => {
    assert.deepEqual(guarded("cocoonset-bookkeeping.cocoonstack.io"), [...BOOKKEEPING_KEYS].sort());
  });

  it("guards exactly the guest hooks record on pods and their status", () => {
    assert.deepEqual(guarded("cocoonset-pod-bookkeeping.cocoonstack.io"), [ANN_GUEST_HOOKS]);
    assert.deepEqual(policy("cocoonset-pod-bookkeeping.cocoonstack.io").spec.matchConstraints.resourceRules, [
      {
        apiGroups: [""],
        apiVersions: ["v1"],
        operations: ["CREATE", "UPDATE"],
        resources: ["pods", "pods/status"],
      },
    ]);
  });

  it("binds every policy it ships", () => {
    const bound = docs
      .filter((d) => d.kind === "ValidatingAdmissionPolicyBinding")
      .map((d) => d.spec.policyName);
    const shipped = docs.filter((d) => d.kind === "ValidatingAdmissionPolicy").map((d) => d.metadata.name);
    assert.deepEqual(bound.sort(), shipped.sort());
  });
});
