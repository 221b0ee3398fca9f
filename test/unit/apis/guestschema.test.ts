// The CocoonGuestPolicy CRD and the claim's parameters: the schema holds exactly the typed fields, sets
// no default the operator would read differently, and reserves the names of the operator's own steps.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, it } from "node:test";
import type { JSONSchemaProps } from "../../../src/apis/v1/openapi.ts";
import { cocoonGuestPolicyCRD } from "../../../src/apis/v1alpha1/guestschema.ts";
import { cocoonClaimCRD } from "../../../src/apis/v1alpha1/poolschema.ts";
import {
  type CocoonClaimSpec,
  type CocoonGuestPolicySpec,
  type GuestHook,
  type GuestRefresh,
  READ_OWNER_STEP,
  REFRESH_STEP,
  RESERVED_HOOK_NAMES,
  WRITE_OWNER_STEP,
} from "../../../src/apis/v1alpha1/types.ts";

const policySchema = cocoonGuestPolicyCRD.spec.versions[0]?.schema.openAPIV3Schema;
const specSchema = policySchema?.properties?.spec;
const keys = (o: object | undefined) => Object.keys(o ?? {}).sort();

// Every optional field set, so a field added to the types but not to the schema fails below.
const fullHook: Required<GuestHook> = {
  name: "h",
  on: ["PostClone"],
  exec: { command: ["true"] },
  timeoutSeconds: 1,
  failurePolicy: "Fail",
  retries: 0,
  backoffSeconds: 1,
};
const fullRefresh: Required<GuestRefresh> = { afterClone: true, afterWake: true };
const fullSpec: Required<CocoonGuestPolicySpec> = { refresh: fullRefresh, hooks: [fullHook] };
const fullClaimSpec: Required<CocoonClaimSpec> = { poolRef: { name: "warm" }, parameters: {} };

function defaults(schema: JSONSchemaProps | undefined, path = ""): string[] {
  if (!schema) return [];
  return [
    ...(schema.default === undefined ? [] : [path]),
    ...Object.entries(schema.properties ?? {}).flatMap(([k, s]) => defaults(s, `${path}.${k}`)),
    ...defaults(schema.items, `${path}[]`),
    ...defaults(schema.additionalProperties, `${path}{}`),
  ];
}

describe("CocoonGuestPolicy CRD", () => {
  it("is namespaced, v1alpha1 only, short name cguest, with no status subresource", () => {
    const { spec } = cocoonGuestPolicyCRD;
    assert.equal(spec.scope, "Namespaced");
    assert.ok(spec.names.shortNames.includes("cguest"));
    assert.deepEqual(
      spec.versions.map((v) => [v.name, v.served, v.storage, v.subresources]),
      [["v1alpha1", true, true, {}]],
    );
    assert.equal(policySchema?.properties?.status, undefined);
  });

  it("has exactly the typed fields of the spec, the refresh and a hook", () => {
    assert.deepEqual(keys(specSchema?.properties), keys(fullSpec));
    assert.deepEqual(keys(specSchema?.properties?.refresh?.properties), keys(fullRefresh));
    assert.deepEqual(keys(specSchema?.properties?.hooks?.items?.properties), keys(fullHook));
    assert.deepEqual(keys(specSchema?.properties?.hooks?.items?.properties?.exec?.properties), ["command"]);
  });

  it("sets no default: the operator applies each, as the descriptions state", () => {
    assert.deepEqual(defaults(policySchema), []);
    const hook = specSchema?.properties?.hooks?.items?.properties ?? {};
    assert.match(hook.timeoutSeconds?.description ?? "", /default 30\b/);
    assert.match(hook.backoffSeconds?.description ?? "", /default 2\b/);
    assert.match(hook.retries?.description ?? "", /default 0\b/);
    assert.match(hook.failurePolicy?.description ?? "", /Fail \(the default\)/);
  });

  it("reserves the names the operator's own steps are reported under, and refuses them", () => {
    const reconciler = readFileSync(resolve(import.meta.dirname, "../../../src/guest/reconciler.ts"), "utf8");
    // Every step the reconciler runs itself is named by one of the reserved constants, none by a literal.
    assert.deepEqual(
      [...reconciler.matchAll(/\bname:\s*"([a-z-]+)"/g)].map((m) => m[1]),
      [],
    );
    assert.deepEqual([...RESERVED_HOOK_NAMES], [REFRESH_STEP, READ_OWNER_STEP, WRITE_OWNER_STEP]);
    const name =
      cocoonGuestPolicyCRD.spec.versions[0]?.schema.openAPIV3Schema.properties?.spec?.properties?.hooks?.items
        ?.properties?.name;
    const rule = name?.["x-kubernetes-validations"]?.find((v) => v.rule.includes("in ["))?.rule ?? "";
    for (const step of RESERVED_HOOK_NAMES)
      assert.ok(rule.includes(`'${step}'`), `${step} is refused: ${rule}`);
  });
});

describe("CocoonClaim spec.parameters", () => {
  const claimSpec = cocoonClaimCRD.spec.versions[0]?.schema.openAPIV3Schema.properties?.spec;

  it("is in the schema with the typed fields, and immutable with the rest of the spec", () => {
    assert.deepEqual(keys(claimSpec?.properties), keys(fullClaimSpec));
    assert.deepEqual(claimSpec?.["x-kubernetes-validations"], [
      { message: "spec is immutable", rule: "self == oldSelf" },
    ]);
  });
});
