// The CocoonGuestPolicy CRD (docs/guest.md), generated into config/crd/bases with the other kinds by
// scripts/gen-crds.ts. The API server refuses what the operator could not run: too many hooks, a
// name events could not tell apart or that the operator's own steps already use, a hook point that
// does not exist, an empty program, bounds beyond what a pass may wait. The schema sets no defaults:
// each default is stated in its field's description and applied by the operator (types.ts), so a
// policy reads back exactly as written. A policy has no status: its members' sets report on it.

import { typeMetaProperties } from "../v1/k8s-schemas.ts";
import type { CustomResourceDefinition, JSONSchemaProps } from "../v1/openapi.ts";
import { crd, int32 } from "../v1/schema.ts";
import {
  DEFAULT_HOOK_BACKOFF_SECONDS,
  DEFAULT_HOOK_TIMEOUT_SECONDS,
  FAILURE_POLICIES,
  HOOK_POINTS,
  KIND_COCOONGUESTPOLICY,
  PLURAL_COCOONGUESTPOLICIES,
  RESERVED_HOOK_NAMES,
  VERSION_V1ALPHA1,
} from "./types.ts";

export const MAX_GUEST_HOOKS = 32;
export const MAX_HOOK_COMMAND_ARGS = 64;
export const MAX_HOOK_ARG_LENGTH = 4096;
export const MAX_HOOK_TIMEOUT_SECONDS = 3600;
export const MAX_HOOK_RETRIES = 10;
export const MAX_HOOK_BACKOFF_SECONDS = 300;

const DNS_LABEL = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
const quoted = (names: readonly string[]) => names.map((n) => `'${n}'`).join(", ");

const hookSchema: JSONSchemaProps = {
  description:
    "GuestHook is a command the operator runs inside each member's guest, over the pod's exec, at the hook points it names. Hooks run again after an operator restart and on every new VM: they must be idempotent.",
  type: "object",
  properties: {
    name: {
      description: `Unique within the policy, a DNS label; events and status name the hook by it, never by its command. ${RESERVED_HOOK_NAMES.join(", ")} are the operator's own steps.`,
      maxLength: 63,
      minLength: 1,
      pattern: DNS_LABEL,
      type: "string",
      "x-kubernetes-validations": [
        {
          rule: `!(self in [${quoted(RESERVED_HOOK_NAMES)}])`,
          message: `hook name must not be ${RESERVED_HOOK_NAMES.join(", ")}: the operator reports its own steps under these names`,
        },
      ],
    },
    on: {
      description: `When the hook runs, at least one of ${HOOK_POINTS.join(", ")}, each at most once. PreHibernate: before a VM hibernates (a suspend, a CocoonHibernation, a migration's quiesce). PostWake: once a VM runs again on its own state. PostClone: once a VM runs on state copied from another (a sub-agent fork, a branch, a pool member, a restore, a first boot). PostClaim: once a CocoonClaim has bound the set; the claim's spec.parameters are on the hook's stdin.`,
      type: "array",
      minItems: 1,
      maxItems: HOOK_POINTS.length,
      items: { enum: [...HOOK_POINTS], type: "string" },
      "x-kubernetes-list-type": "set",
    },
    exec: {
      description:
        "The command, as the pod's exec takes it (kubectl exec POD -- COMMAND...); use sh -c for a shell line. Its stdin is a JSON context: the hook point, namespace, pod, set, VM, and for PostClaim the claim's name and parameters.",
      type: "object",
      properties: {
        command: {
          description: `The program and its arguments: 1 to ${MAX_HOOK_COMMAND_ARGS} items of at most ${MAX_HOOK_ARG_LENGTH} characters, the program not empty.`,
          type: "array",
          minItems: 1,
          maxItems: MAX_HOOK_COMMAND_ARGS,
          items: { maxLength: MAX_HOOK_ARG_LENGTH, type: "string" },
          "x-kubernetes-list-type": "atomic",
          "x-kubernetes-validations": [
            {
              rule: "size(self) == 0 || size(self[0]) > 0",
              message: "exec.command[0], the program, must not be empty",
            },
          ],
        },
      },
      required: ["command"],
    },
    timeoutSeconds: int32({
      description: `Each attempt's deadline in seconds, 1 to ${MAX_HOOK_TIMEOUT_SECONDS}; default ${DEFAULT_HOOK_TIMEOUT_SECONDS}. An attempt past it counts as failed.`,
      maximum: MAX_HOOK_TIMEOUT_SECONDS,
      minimum: 1,
    }),
    failurePolicy: {
      description:
        "Fail (the default): the member is not Ready, and a VM does not hibernate, until the hook succeeds. Ignore: a failure is a Warning event and nothing waits for it.",
      enum: [...FAILURE_POLICIES],
      type: "string",
    },
    retries: int32({
      description: `Attempts after the first, 0 to ${MAX_HOOK_RETRIES}; default 0.`,
      maximum: MAX_HOOK_RETRIES,
      minimum: 0,
    }),
    backoffSeconds: int32({
      description: `The wait in seconds before the first retry, doubled for each further one, 1 to ${MAX_HOOK_BACKOFF_SECONDS}; default ${DEFAULT_HOOK_BACKOFF_SECONDS}.`,
      maximum: MAX_HOOK_BACKOFF_SECONDS,
      minimum: 1,
    }),
  },
  required: ["name", "on", "exec"],
};

const guestPolicySchema: JSONSchemaProps = {
  description:
    "CocoonGuestPolicy says what the operator does inside the guests of the CocoonSets that name it with the annotation cocoonset.cocoonstack.io/guest-policy (a pool template passes it to its members).",
  type: "object",
  properties: {
    ...typeMetaProperties,
    spec: {
      description: "CocoonGuestPolicySpec is the built-in refresh to run and the hooks.",
      type: "object",
      properties: {
        refresh: {
          description:
            "The built-in refresh (docs/guest.md lists its exact guest commands). It runs before the post-clone or post-wake hooks.",
          type: "object",
          properties: {
            afterClone: {
              description:
                "Once a VM runs on copied state: a new machine-id, the pod's name as hostname, new SSH host keys, fresh entropy from the operator and its clock. Default false.",
              type: "boolean",
            },
            afterWake: {
              description:
                "Once a VM runs again on its own state: fresh entropy from the operator and its clock. Default false.",
              type: "boolean",
            },
          },
        },
        hooks: {
          description: `At most ${MAX_GUEST_HOOKS}; at one hook point they run in this order.`,
          type: "array",
          maxItems: MAX_GUEST_HOOKS,
          items: hookSchema,
          "x-kubernetes-list-type": "atomic",
          "x-kubernetes-validations": [
            {
              rule: "self.all(a, self.exists_one(b, b.name == a.name))",
              message: "hook names must be unique within the policy",
            },
          ],
        },
      },
    },
  },
  required: ["spec"],
};

const base = crd(
  KIND_COCOONGUESTPOLICY,
  PLURAL_COCOONGUESTPOLICIES,
  "cguest",
  [
    { jsonPath: ".spec.hooks[*].name", name: "Hooks", type: "string" },
    { jsonPath: ".spec.refresh.afterClone", name: "RefreshAfterClone", type: "boolean" },
    { jsonPath: ".spec.refresh.afterWake", name: "RefreshAfterWake", type: "boolean" },
  ],
  guestPolicySchema,
  [],
  VERSION_V1ALPHA1,
);

/** No status subresource: a policy has no status of its own. */
export const cocoonGuestPolicyCRD: CustomResourceDefinition = {
  ...base,
  spec: {
    ...base.spec,
    versions: base.spec.versions.map((version) => ({ ...version, subresources: {} })),
  },
};
