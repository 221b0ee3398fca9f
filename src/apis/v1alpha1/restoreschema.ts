// The CocoonRestore CRD (docs/checkpoints.md), generated into config/crd/bases with the other kinds by
// scripts/gen-crds.ts. A restore is one-shot: both names are required and the spec cannot change once
// written (a restore of another set or to another checkpoint is another CocoonRestore). Whether they
// exist, and whether the checkpoint fits the set, is the controller's to report.

import { conditionListSchema, typeMetaProperties } from "../v1/k8s-schemas.ts";
import type { CustomResourceDefinition, JSONSchemaProps } from "../v1/openapi.ts";
import { crd, GO_DURATION, int64, str } from "../v1/schema.ts";
import { KIND_COCOONRESTORE, PLURAL_COCOONRESTORES, RESTORE_PHASES, VERSION_V1ALPHA1 } from "./types.ts";

const DNS_SUBDOMAIN = "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$";
const objectRef = (description: string): JSONSchemaProps => ({
  description,
  type: "object",
  properties: { name: { maxLength: 253, minLength: 1, pattern: DNS_SUBDOMAIN, type: "string" } },
  required: ["name"],
});

const restoreSchema: JSONSchemaProps = {
  description:
    "CocoonRestore rolls a CocoonSet back to a CocoonCheckpoint: its current state is discarded, each member restores from the checkpoint.",
  type: "object",
  properties: {
    ...typeMetaProperties,
    spec: {
      description: "CocoonRestoreSpec names the set and the checkpoint it goes back to.",
      type: "object",
      properties: {
        checkpointRef: objectRef(
          "The CocoonCheckpoint in the same namespace: of the set, or of the set it was branched from.",
        ),
        cocoonSetRef: objectRef("The CocoonSet in the same namespace whose state is replaced."),
        failureDeadline: {
          description:
            "A duration (Go syntax, e.g. 30m) from the restore's creation, default 1h: a restore not Restored by then goes Failed (DeadlineExceeded) and lets go of its set.",
          type: "string",
          pattern: GO_DURATION,
          "x-kubernetes-validations": [
            { rule: "duration(self) > duration('0s')", message: "failureDeadline must be positive" },
          ],
        },
      },
      required: ["cocoonSetRef", "checkpointRef"],
      "x-kubernetes-validations": [
        { message: "spec is immutable: a restore is one-shot, create another", rule: "self == oldSelf" },
      ],
    },
    status: {
      description: "CocoonRestoreStatus is how far the restore is, or why it failed.",
      type: "object",
      properties: {
        completionTime: { format: "date-time", type: "string" },
        conditions: conditionListSchema,
        members: {
          type: "array",
          items: {
            type: "object",
            properties: { digest: str, fromVM: str, vmName: str },
            required: ["vmName", "fromVM", "digest"],
          },
          "x-kubernetes-list-type": "atomic",
        },
        message: str,
        observedGeneration: int64,
        phase: { enum: [...RESTORE_PHASES], type: "string" },
        reason: str,
        resumed: { type: "boolean" },
        startTime: { format: "date-time", type: "string" },
        suspendedBefore: { type: "boolean" },
      },
    },
  },
  required: ["spec"],
};

export const cocoonRestoreCRD: CustomResourceDefinition = crd(
  KIND_COCOONRESTORE,
  PLURAL_COCOONRESTORES,
  "crestore",
  [
    { jsonPath: ".spec.cocoonSetRef.name", name: "Set", type: "string" },
    { jsonPath: ".spec.checkpointRef.name", name: "Checkpoint", type: "string" },
    { jsonPath: ".status.phase", name: "Phase", type: "string" },
    { jsonPath: ".status.reason", name: "Reason", type: "string" },
  ],
  restoreSchema,
  [],
  VERSION_V1ALPHA1,
);
