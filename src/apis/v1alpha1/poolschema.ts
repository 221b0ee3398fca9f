// The CocoonPool and CocoonClaim CRDs (docs/pools.md), generated into config/crd/bases with the other
// kinds by scripts/gen-crds.ts. A pool's template is a CocoonSet spec with every rule of the CocoonSet
// CRD, less spec.suspend, which the pool owns (its warmth). A pool has the /scale subresource, so
// kubectl scale, an HPA or KEDA drive spec.replicas; its selector picks the unclaimed member sets.

import { conditionListSchema, typeMetaProperties } from "../v1/k8s-schemas.ts";
import type { CustomResourceDefinition, JSONSchemaProps } from "../v1/openapi.ts";
import { cocoonSetSpecSchema, crd, int32, int64, str } from "../v1/schema.ts";
import {
  CLAIM_PHASES,
  DEFAULT_POOL_WARMTH,
  KIND_COCOONCLAIM,
  KIND_COCOONPOOL,
  PLURAL_COCOONCLAIMS,
  PLURAL_COCOONPOOLS,
  POOL_WARMTHS,
  VERSION_V1ALPHA1,
} from "./types.ts";

const DNS_SUBDOMAIN = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$";
const objectName = (description: string): JSONSchemaProps => ({
  description,
  maxLength: 253,
  minLength: 1,
  pattern: DNS_SUBDOMAIN,
  type: "string",
});
const stringMap: JSONSchemaProps = { type: "object", additionalProperties: str };

export const MAX_CLAIM_PARAMETERS = 64;
export const MAX_CLAIM_PARAMETER_VALUE_LENGTH = 4096;
/** A parameter's name: an environment variable's, with the '-' and '.' a label's name may hold too. */
export const CLAIM_PARAMETER_NAME = "^[A-Za-z_][-._A-Za-z0-9]{0,62}$";

const parametersSchema: JSONSchemaProps = {
  description: `Passed as they are to the bound set's PostClaim hooks on their stdin (docs/guest.md); never logged, never in an event. At most ${MAX_CLAIM_PARAMETERS}, each name 1 to 63 letters, digits, '_', '-' or '.' starting with a letter or '_', each value at most ${MAX_CLAIM_PARAMETER_VALUE_LENGTH} characters. Not a place for secrets: whoever may read the claim reads them. Fixed once the claim is created, like the rest of the spec.`,
  type: "object",
  maxProperties: MAX_CLAIM_PARAMETERS,
  additionalProperties: { maxLength: MAX_CLAIM_PARAMETER_VALUE_LENGTH, type: "string" },
  "x-kubernetes-validations": [
    {
      rule: `self.all(k, k.matches('${CLAIM_PARAMETER_NAME}'))`,
      message: "parameter names are 1 to 63 letters, digits, '_', '-' or '.', starting with a letter or '_'",
    },
  ],
};

/**
 * A member is named `<pool>-<5 characters>`, and a CocoonSet name ends up in VM names and pod names:
 * 63 characters leave the member's name room under a label value's limit.
 */
export const MAX_POOL_NAME_LENGTH = 57;

const poolSchema: JSONSchemaProps = {
  description: "CocoonPool keeps warm CocoonSets that CocoonClaims bind.",
  type: "object",
  properties: {
    ...typeMetaProperties,
    spec: {
      description: "CocoonPoolSpec is the member template and how many unclaimed members to keep.",
      type: "object",
      properties: {
        fromCheckpoint: objectName("A CocoonCheckpoint in the namespace every member branches from."),
        replicas: int32({ default: 1, description: "Unclaimed members to keep.", minimum: 0 }),
        template: {
          description: "The CocoonSet every member is, with labels and annotations for it.",
          type: "object",
          properties: {
            metadata: {
              type: "object",
              properties: { annotations: stringMap, labels: stringMap },
            },
            spec: cocoonSetSpecSchema,
          },
          required: ["spec"],
          "x-kubernetes-validations": [
            {
              message: "template.spec.suspend is the pool's: set spec.warmth instead",
              rule: "!has(self.spec.suspend)",
            },
          ],
        },
        warmth: {
          default: DEFAULT_POOL_WARMTH,
          description:
            "Running: members run and a claim is instant. Suspended: members are hibernated and a claim wakes one.",
          enum: [...POOL_WARMTHS],
          type: "string",
        },
      },
      required: ["template"],
    },
    status: {
      description: "CocoonPoolStatus counts the pool's members by state.",
      type: "object",
      properties: {
        claimed: int32(),
        conditions: conditionListSchema,
        observedGeneration: int64,
        outdated: int32(),
        ready: int32(),
        replicas: int32(),
        selector: str,
        starting: int32(),
      },
    },
  },
  required: ["spec"],
  "x-kubernetes-validations": [
    {
      message: `metadata.name must be at most ${MAX_POOL_NAME_LENGTH} characters: members are named <pool>-<5 characters>`,
      rule: `size(self.metadata.name) <= ${MAX_POOL_NAME_LENGTH}`,
    },
  ],
};

const claimSchema: JSONSchemaProps = {
  description: "CocoonClaim binds one ready member of a CocoonPool.",
  type: "object",
  properties: {
    ...typeMetaProperties,
    spec: {
      description: "CocoonClaimSpec names the pool to claim from, and what the bound set's hooks are given.",
      type: "object",
      properties: {
        parameters: parametersSchema,
        poolRef: {
          description: "The CocoonPool in the same namespace.",
          type: "object",
          properties: { name: objectName("The pool's name.") },
          required: ["name"],
        },
      },
      required: ["poolRef"],
      "x-kubernetes-validations": [{ message: "spec is immutable", rule: "self == oldSelf" }],
    },
    status: {
      description: "CocoonClaimStatus is the bound set, or why there is none yet.",
      type: "object",
      properties: {
        boundTime: { format: "date-time", type: "string" },
        cocoonSetRef: { type: "object", properties: { name: str }, required: ["name"] },
        conditions: conditionListSchema,
        message: str,
        observedGeneration: int64,
        phase: { enum: [...CLAIM_PHASES], type: "string" },
        reason: str,
      },
    },
  },
  required: ["spec"],
};

const poolBase = crd(
  KIND_COCOONPOOL,
  PLURAL_COCOONPOOLS,
  "cpool",
  [
    { jsonPath: ".spec.warmth", name: "Warmth", type: "string" },
    { jsonPath: ".spec.replicas", name: "Desired", type: "integer" },
    { jsonPath: ".status.ready", name: "Ready", type: "integer" },
    { jsonPath: ".status.claimed", name: "Claimed", type: "integer" },
  ],
  poolSchema,
  [],
  VERSION_V1ALPHA1,
);

export const cocoonPoolCRD: CustomResourceDefinition = {
  ...poolBase,
  spec: {
    ...poolBase.spec,
    versions: poolBase.spec.versions.map((version) => ({
      ...version,
      subresources: {
        ...version.subresources,
        scale: {
          labelSelectorPath: ".status.selector",
          specReplicasPath: ".spec.replicas",
          statusReplicasPath: ".status.replicas",
        },
      },
    })),
  },
};

export const cocoonClaimCRD: CustomResourceDefinition = crd(
  KIND_COCOONCLAIM,
  PLURAL_COCOONCLAIMS,
  "cclaim",
  [
    { jsonPath: ".spec.poolRef.name", name: "Pool", type: "string" },
    { jsonPath: ".status.phase", name: "Phase", type: "string" },
    { jsonPath: ".status.cocoonSetRef.name", name: "Set", type: "string" },
    { jsonPath: '.status.conditions[?(@.type=="Ready")].status', name: "Ready", type: "string" },
  ],
  claimSchema,
  [],
  VERSION_V1ALPHA1,
);
