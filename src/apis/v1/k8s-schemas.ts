// Schemas of the upstream Kubernetes types embedded in our CRDs (meta/v1 Condition, core/v1
// ResourceRequirements, EnvFromSource, Quantity), with the texts controller-gen emits for them.
import type { JSONSchemaProps } from "./openapi.ts";

export const typeMetaProperties: Record<string, JSONSchemaProps> = {
  apiVersion: {
    description: `APIVersion defines the versioned schema of this representation of an object.
Servers should convert recognized schemas to the latest internal value, and
may reject unrecognized values.
More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources`,
    type: "string",
  },
  kind: {
    description: `Kind is a string value representing the REST resource this object represents.
Servers may infer this from the endpoint the client submits requests to.
Cannot be updated.
In CamelCase.
More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds`,
    type: "string",
  },
  metadata: { type: "object" },
};

const QUANTITY_PATTERN =
  "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$";

/** resource.Quantity: an int-or-string matching the quantity grammar. */
export function quantitySchema(description?: string): JSONSchemaProps {
  return {
    anyOf: [{ type: "integer" }, { type: "string" }],
    ...(description === undefined ? {} : { description }),
    pattern: QUANTITY_PATTERN,
    "x-kubernetes-int-or-string": true,
  };
}

export const resourceRequirementsSchema: JSONSchemaProps = {
  description: "ResourceRequirements describes the compute resource requirements.",
  type: "object",
  properties: {
    claims: {
      description: `Claims lists the names of resources, defined in spec.resourceClaims,
that are used by this container.

This field depends on the
DynamicResourceAllocation feature gate.

This field is immutable. It can only be set for containers.`,
      type: "array",
      items: {
        description: "ResourceClaim references one entry in PodSpec.ResourceClaims.",
        type: "object",
        properties: {
          name: {
            description: `Name must match the name of one entry in pod.spec.resourceClaims of
the Pod where this field is used. It makes that resource available
inside a container.`,
            type: "string",
          },
          request: {
            description: `Request is the name chosen for a request in the referenced claim.
If empty, everything from the claim is made available, otherwise
only the result of this request.`,
            type: "string",
          },
        },
        required: ["name"],
      },
      "x-kubernetes-list-map-keys": ["name"],
      "x-kubernetes-list-type": "map",
    },
    limits: {
      description: `Limits describes the maximum amount of compute resources allowed.
More info: https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/`,
      type: "object",
      additionalProperties: quantitySchema(),
    },
    requests: {
      description: `Requests describes the minimum amount of compute resources required.
If Requests is omitted for a container, it defaults to Limits if that is explicitly specified,
otherwise to an implementation-defined value. Requests cannot exceed Limits.
More info: https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/`,
      type: "object",
      additionalProperties: quantitySchema(),
    },
  },
};

function sourceRefSchema(kind: "ConfigMap" | "Secret"): JSONSchemaProps {
  return {
    description: `The ${kind} to select from`,
    type: "object",
    properties: {
      name: {
        default: "",
        description: `Name of the referent.
This field is effectively required, but due to backwards compatibility is
allowed to be empty. Instances of this type with an empty value here are
almost certainly wrong.
More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#names`,
        type: "string",
      },
      optional: { description: `Specify whether the ${kind} must be defined`, type: "boolean" },
    },
    "x-kubernetes-map-type": "atomic",
  };
}

export const envFromListSchema: JSONSchemaProps = {
  type: "array",
  items: {
    description: "EnvFromSource represents the source of a set of ConfigMaps or Secrets",
    type: "object",
    properties: {
      configMapRef: sourceRefSchema("ConfigMap"),
      prefix: {
        description: `Optional text to prepend to the name of each environment variable.
May consist of any printable ASCII characters except '='.`,
        type: "string",
      },
      secretRef: sourceRefSchema("Secret"),
    },
  },
};

/** []metav1.Condition as a list-map keyed by type. */
export const conditionListSchema: JSONSchemaProps = {
  type: "array",
  items: {
    description: "Condition contains details for one aspect of the current state of this API Resource.",
    type: "object",
    properties: {
      lastTransitionTime: {
        description: `lastTransitionTime is the last time the condition transitioned from one status to another.
This should be when the underlying condition changed.  If that is not known, then using the time when the API field changed is acceptable.`,
        format: "date-time",
        type: "string",
      },
      message: {
        description: `message is a human readable message indicating details about the transition.
This may be an empty string.`,
        maxLength: 32768,
        type: "string",
      },
      observedGeneration: {
        description: `observedGeneration represents the .metadata.generation that the condition was set based upon.
For instance, if .metadata.generation is currently 12, but the .status.conditions[x].observedGeneration is 9, the condition is out of date
with respect to the current state of the instance.`,
        format: "int64",
        minimum: 0,
        type: "integer",
      },
      reason: {
        description: `reason contains a programmatic identifier indicating the reason for the condition's last transition.
Producers of specific condition types may define expected values and meanings for this field,
and whether the values are considered a guaranteed API.
The value should be a CamelCase string.
This field may not be empty.`,
        maxLength: 1024,
        minLength: 1,
        pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        type: "string",
      },
      status: {
        description: "status of the condition, one of True, False, Unknown.",
        enum: ["True", "False", "Unknown"],
        type: "string",
      },
      type: {
        description: "type of condition in CamelCase or in foo.example.com/CamelCase.",
        maxLength: 316,
        pattern:
          "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
        type: "string",
      },
    },
    required: ["lastTransitionTime", "message", "reason", "status", "type"],
  },
  "x-kubernetes-list-map-keys": ["type"],
  "x-kubernetes-list-type": "map",
};
