// The CocoonCheckpoint CRD (docs/checkpoints.md): the source of config/crd/bases/
// cocoonset.cocoonstack.io_cocooncheckpoints.yaml, generated with the v1 CRDs by scripts/gen-crds.ts.
// CEL carries what needs no lookup: the name must make a valid registry tag `ckpt-<name>`, and the
// spec cannot move to another set once written. Whether the set exists is the controller's to report.

import { conditionListSchema, typeMetaProperties } from "../v1/k8s-schemas.ts";
import type { CustomResourceDefinition, JSONSchemaProps } from "../v1/openapi.ts";
import { crd, GO_DURATION, int32, int64, str } from "../v1/schema.ts";
import { GROUP } from "../v1/types.ts";
import { cocoonGuestPolicyCRD } from "./guestschema.ts";
import { cocoonClaimCRD, cocoonPoolCRD } from "./poolschema.ts";
import { cocoonRestoreCRD } from "./restoreschema.ts";
import {
  CHECKPOINT_PHASES,
  KIND_COCOONCHECKPOINT,
  PLURAL_COCOONCHECKPOINTS,
  PLURAL_COCOONCLAIMS,
  PLURAL_COCOONGUESTPOLICIES,
  PLURAL_COCOONPOOLS,
  PLURAL_COCOONRESTORES,
  VERSION_V1ALPHA1,
} from "./types.ts";

/** An OCI tag is at most 128 characters; `ckpt-` takes five of them. */
export const MAX_CHECKPOINT_NAME_LENGTH = 128 - "ckpt-".length;

const DNS_SUBDOMAIN = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$";
/** Go's time.ParseDuration syntax without a sign: "90s", "1h30m", "1.5h". */

export const checkpointRootRules = [
  {
    rule: `size(self.metadata.name) <= ${MAX_CHECKPOINT_NAME_LENGTH}`,
    message: `metadata.name must be at most ${MAX_CHECKPOINT_NAME_LENGTH} characters: the registry tag ckpt-<name> is limited to 128`,
  },
];

const memberSchema: JSONSchemaProps = {
  description: "CheckpointMember is one VM of the set and its checkpoint tag.",
  type: "object",
  properties: {
    backend: { description: "The hypervisor the snapshot was taken with.", type: "string" },
    bytes: { ...int64, description: "Bytes the snapshot manifest references (config and layers)." },
    digest: { description: "Digest of <vmName>:ckpt-<checkpoint name>.", type: "string" },
    image: {
      description: "The image the snapshot was taken from (cocoonstack.snapshot.baseimage).",
      type: "string",
    },
    os: { description: "The guest OS of the snapshot.", type: "string" },
    role: { enum: ["main", "sub-agent", "toolbox"], type: "string" },
    skipped: {
      description:
        "Why the member's :hibernate was not copied: not the snapshot of the suspend checkpointed.",
      type: "string",
    },
    slot: int32({ description: "Agent slot (0 = main); absent for a toolbox.", minimum: 0 }),
    snapshotCompatibilityClass: {
      description: "The snapshot compatibility class the VM ran under (empty for none).",
      type: "string",
    },
    toolbox: { description: "Toolbox name; absent for an agent.", type: "string" },
    vmName: { description: "The source VM; its repository holds the checkpoint tag.", type: "string" },
  },
  required: ["role", "vmName"],
};

const checkpointSchema: JSONSchemaProps = {
  description: "CocoonCheckpoint is a named copy of a suspended CocoonSet's snapshots.",
  type: "object",
  properties: {
    ...typeMetaProperties,
    spec: {
      description: "CocoonCheckpointSpec names the CocoonSet to checkpoint.",
      type: "object",
      properties: {
        cocoonSetRef: {
          description: "The CocoonSet in the same namespace.",
          type: "object",
          properties: { name: { maxLength: 253, minLength: 1, pattern: DNS_SUBDOMAIN, type: "string" } },
          required: ["name"],
        },
        failureDeadline: {
          description:
            "A duration (Go syntax, e.g. 5m) from the checkpoint's creation: a checkpoint not Ready by then goes Failed.",
          type: "string",
          pattern: GO_DURATION,
          "x-kubernetes-validations": [
            { rule: "duration(self) > duration('0s')", message: "failureDeadline must be positive" },
          ],
        },
      },
      required: ["cocoonSetRef"],
      "x-kubernetes-validations": [{ message: "spec is immutable", rule: "self == oldSelf" }],
    },
    status: {
      description: "CocoonCheckpointStatus is the observed state of a CocoonCheckpoint.",
      type: "object",
      properties: {
        conditions: conditionListSchema,
        exclusiveBytes: {
          ...int64,
          description:
            "Bytes of its snapshots that the set's current :hibernate snapshots do not reference: what the registry keeps for checkpoints alone.",
        },
        exclusiveBytesSetGeneration: {
          ...int64,
          description: "The CocoonSet generation exclusiveBytes was measured at.",
        },
        members: { type: "array", items: memberSchema, "x-kubernetes-list-type": "atomic" },
        message: str,
        observedGeneration: int64,
        phase: { enum: [...CHECKPOINT_PHASES], type: "string" },
        progress: {
          description: "How far the copy is: members tagged and their bytes, against the total.",
          type: "object",
          properties: {
            bytesCopied: int64,
            bytesTotal: int64,
            membersCopied: int32({ minimum: 0 }),
            membersTotal: int32({ minimum: 0 }),
          },
        },
        readyTime: { format: "date-time", type: "string" },
        totalBytes: int64,
      },
    },
  },
  required: ["spec"],
  "x-kubernetes-validations": checkpointRootRules,
};

export const cocoonCheckpointCRD: CustomResourceDefinition = crd(
  KIND_COCOONCHECKPOINT,
  PLURAL_COCOONCHECKPOINTS,
  "ckpt",
  [
    { jsonPath: ".spec.cocoonSetRef.name", name: "Set", type: "string" },
    { jsonPath: ".status.phase", name: "Phase", type: "string" },
    { jsonPath: ".status.totalBytes", name: "Bytes", type: "integer" },
  ],
  checkpointSchema,
  [],
  VERSION_V1ALPHA1,
);

export const v1alpha1CrdFiles: { file: string; crd: CustomResourceDefinition }[] = [
  { file: `${GROUP}_${PLURAL_COCOONCHECKPOINTS}.yaml`, crd: cocoonCheckpointCRD },
  { file: `${GROUP}_${PLURAL_COCOONPOOLS}.yaml`, crd: cocoonPoolCRD },
  { file: `${GROUP}_${PLURAL_COCOONCLAIMS}.yaml`, crd: cocoonClaimCRD },
  { file: `${GROUP}_${PLURAL_COCOONRESTORES}.yaml`, crd: cocoonRestoreCRD },
  { file: `${GROUP}_${PLURAL_COCOONGUESTPOLICIES}.yaml`, crd: cocoonGuestPolicyCRD },
];
