import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { JSONSchemaProps } from "../../../src/apis/v1/openapi.ts";
import { cocoonHibernationCRD, cocoonSetCRD } from "../../../src/apis/v1/schema.ts";
import { cocoonGuestPolicyCRD } from "../../../src/apis/v1alpha1/guestschema.ts";
import { cocoonClaimCRD } from "../../../src/apis/v1alpha1/poolschema.ts";
import { CEL_CASE_KINDS, celCases } from "../../fixtures/cel-cases.ts";

function ruleMessages(schema: JSONSchemaProps | undefined): string[] {
  if (!schema) return [];
  return [
    ...(schema["x-kubernetes-validations"] ?? []).map((r) => r.message),
    ...Object.values(schema.properties ?? {}).flatMap(ruleMessages),
    ...ruleMessages(schema.items),
  ];
}

const messagesByKind = {
  CocoonSet: ruleMessages(cocoonSetCRD.spec.versions[0]?.schema.openAPIV3Schema),
  CocoonHibernation: ruleMessages(cocoonHibernationCRD.spec.versions[0]?.schema.openAPIV3Schema),
  CocoonGuestPolicy: ruleMessages(cocoonGuestPolicyCRD.spec.versions[0]?.schema.openAPIV3Schema),
  CocoonClaim: ruleMessages(cocoonClaimCRD.spec.versions[0]?.schema.openAPIV3Schema),
};

describe("celCases fixture", () => {
  it("has unique case names", () => {
    const names = celCases.map((c) => c.name);
    assert.equal(new Set(names).size, names.length);
  });

  it("covers every kind it names", () => {
    assert.deepEqual(Object.keys(messagesByKind).sort(), [...CEL_CASE_KINDS].sort());
  });

  it("gives every rejecting case a message taken from one of the kind's CEL rules, unless the schema refuses it", () => {
    for (const c of celCases.filter((c) => !c.valid && !c.bySchema)) {
      assert.ok(c.message, c.name);
      assert.ok(
        messagesByKind[c.kind].some((m) => m.includes(c.message ?? "")),
        `${c.name}: ${c.message}`,
      );
    }
  });

  it("rejects something for every CEL rule of each CRD", () => {
    for (const [kind, messages] of Object.entries(messagesByKind)) {
      for (const message of messages) {
        const covered = celCases.some(
          (c) => c.kind === kind && !c.valid && !c.bySchema && message.includes(c.message ?? "\0"),
        );
        assert.ok(covered, `${kind}: no rejecting case for "${message}"`);
      }
    }
  });

  it("updates the same object it creates", () => {
    const nameOf = (o: unknown) => (o as { metadata: { name: string } }).metadata.name;
    for (const c of celCases.filter((c) => c.update))
      assert.equal(nameOf(c.update?.from), nameOf(c.object), c.name);
  });
});
