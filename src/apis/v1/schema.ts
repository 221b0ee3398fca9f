// The CocoonSet and CocoonHibernation CRDs: the single source of truth for
// config/crd/bases/*.yaml (scripts/gen-crds.ts). A superset of the upstream CRDs:
// every upstream field, default and rule, plus the webhook checks expressible in CEL (cel.ts).
import {
  agentRules,
  cocoonHibernationRootRules,
  cocoonSetSpecRules,
  MAX_IMAGE_LENGTH,
  MAX_TOOLBOX_NAME_LENGTH,
  MAX_TOOLBOXES,
  toolboxListRules,
  toolboxRules,
} from "./cel.ts";
import {
  conditionListSchema,
  envFromListSchema,
  quantitySchema,
  resourceRequirementsSchema,
  typeMetaProperties,
} from "./k8s-schemas.ts";
import type { CustomResourceDefinition, JSONSchemaProps, PrinterColumn } from "./openapi.ts";
import {
  AGENT_MODES,
  BACKENDS,
  COCOONSET_PHASES,
  CONN_TYPES,
  DEFAULT_AGENT_MODE,
  DEFAULT_BACKEND,
  DEFAULT_HIBERNATE_POLICY,
  DEFAULT_NODE_POOL,
  DEFAULT_OS,
  DEFAULT_SNAPSHOT_POLICY,
  DEFAULT_TOOLBOX_MODE,
  GROUP,
  HIBERNATE_POLICIES,
  HIBERNATION_DESIRES,
  HIBERNATION_PHASES,
  KIND_COCOONHIBERNATION,
  KIND_COCOONSET,
  OS_TYPES,
  PLURAL_COCOONHIBERNATIONS,
  PLURAL_COCOONSETS,
  SNAPSHOT_POLICIES,
  TOOLBOX_MODES,
  VERSION,
} from "./types.ts";

export const int32 = (extra: JSONSchemaProps = {}): JSONSchemaProps => ({
  format: "int32",
  type: "integer",
  ...extra,
});
export const int64: JSONSchemaProps = { format: "int64", type: "integer" };
export const str: JSONSchemaProps = { type: "string" };
/** A Go duration (time.ParseDuration's syntax), as the v1alpha1 deadlines take. */
export const GO_DURATION = "^([0-9]+(\\.[0-9]*)?(ns|us|\u00b5s|ms|s|m|h))+$";
const port = (description?: string): JSONSchemaProps =>
  int32({ ...(description === undefined ? {} : { description }), maximum: 65535, minimum: 0 });

const connTypeSchema: JSONSchemaProps = {
  description: `ConnType is the connection protocol advertised for a VM. Empty
falls back to OS-based inference (Linux→ssh, Windows→rdp, Android→adb);
set explicitly to override (e.g. Linux+xrdp→rdp).`,
  enum: [...CONN_TYPES],
  type: "string",
};

/** VMOptions, inlined into the agent and every toolbox. */
const vmOptionsProperties: Record<string, JSONSchemaProps> = {
  backend: {
    default: DEFAULT_BACKEND,
    description: `Backend selects the hypervisor backend used to run a VM.
Firecracker uses direct kernel boot and only supports OCI VM images
(cloudimg URLs and Windows are rejected); the webhook and vk-cocoon
enforce these constraints at admission and run time.`,
    enum: [...BACKENDS],
    type: "string",
  },
  connType: connTypeSchema,
  forcePull: {
    description: "ForcePull bypasses the image cache and re-pulls from upstream.",
    type: "boolean",
  },
  network: { description: "Network selects the cluster network to attach the VM to.", type: "string" },
  noDirectIO: {
    description: `NoDirectIO disables O_DIRECT on writable disks, using host page
cache instead. Useful for dev/test with few VMs and abundant host
memory. Cloud Hypervisor only; ignored by firecracker.`,
    type: "boolean",
  },
  os: {
    default: DEFAULT_OS,
    description: "OSType defines the guest operating system type.",
    enum: [...OS_TYPES],
    type: "string",
  },
  probePort: port("ProbePort overrides the default ICMP probe with a TCP port check."),
  resources: resourceRequirementsSchema,
  storage: quantitySchema("Storage sizes the VM root volume."),
};

const agentSchema: JSONSchemaProps = {
  description: "AgentSpec defines the configuration for agent VMs in a CocoonSet.",
  type: "object",
  properties: {
    ...vmOptionsProperties,
    envFrom: envFromListSchema,
    image: { maxLength: MAX_IMAGE_LENGTH, minLength: 1, type: "string" },
    mode: {
      default: DEFAULT_AGENT_MODE,
      description: "AgentMode defines the mode of an agent VM.",
      enum: [...AGENT_MODES],
      type: "string",
    },
    replicas: int32({
      default: 0,
      description: "Replicas is the number of sub-agents; the main agent is always created in addition.",
      minimum: 0,
    }),
    serviceAccountName: str,
  },
  required: ["image"],
  "x-kubernetes-validations": agentRules,
};

const toolboxSchema: JSONSchemaProps = {
  description: "ToolboxSpec defines the configuration for a toolbox VM in a CocoonSet.",
  type: "object",
  properties: {
    ...vmOptionsProperties,
    image: { maxLength: MAX_IMAGE_LENGTH, type: "string" },
    mode: {
      default: DEFAULT_TOOLBOX_MODE,
      description: "ToolboxMode defines the mode of a toolbox VM.",
      enum: [...TOOLBOX_MODES],
      type: "string",
    },
    name: {
      maxLength: MAX_TOOLBOX_NAME_LENGTH,
      minLength: 1,
      pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
      type: "string",
    },
    staticIP: str,
    staticVMID: str,
    vncPort: port(),
  },
  required: ["name"],
  "x-kubernetes-validations": toolboxRules,
};

export const cocoonSetSpecSchema: JSONSchemaProps = {
  description: "CocoonSetSpec defines the desired state of a CocoonSet.",
  type: "object",
  properties: {
    agent: agentSchema,
    hibernatePolicy: {
      default: DEFAULT_HIBERNATE_POLICY,
      description: `HibernatePolicy keeps (retain) or frees (release) the VM's scheduling
seat while suspended; release requires a main-only set until sub-agent/
toolbox restore intent is extended.`,
      enum: [...HIBERNATE_POLICIES],
      type: "string",
    },
    nodeName: {
      description: `NodeName pins the VM to a node (cross-node migrate). Empty = let the
scheduler place it within NodePool and leave it alone; a value adds a
hostname nodeAffinity so the pod lands there or stays Pending if it won't fit.`,
      type: "string",
    },
    nodePool: { default: DEFAULT_NODE_POOL, type: "string" },
    snapshotCompatibilityClass: {
      description: `SnapshotCompatibilityClass selects nodes that expose a guest-visible CPU
ABI compatible with this set's memory snapshots. It is independent from
NodePool so multiple workload pools can share one snapshot class.`,
      maxLength: 63,
      pattern: "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$",
      type: "string",
    },
    snapshotPolicy: {
      default: DEFAULT_SNAPSHOT_POLICY,
      description: "SnapshotPolicy defines when VM snapshots are taken.",
      enum: [...SNAPSHOT_POLICIES],
      type: "string",
    },
    suspend: { type: "boolean" },
    toolboxes: {
      type: "array",
      items: toolboxSchema,
      maxItems: MAX_TOOLBOXES,
      "x-kubernetes-validations": toolboxListRules,
    },
  },
  required: ["agent"],
  "x-kubernetes-validations": [
    {
      message: "hibernatePolicy=release requires agent.replicas=0 and no toolboxes",
      rule: "!has(self.hibernatePolicy) || self.hibernatePolicy != 'release' || ((!has(self.agent.replicas) || self.agent.replicas == 0) && (!has(self.toolboxes) || size(self.toolboxes) == 0))",
    },
    {
      message: "snapshotCompatibilityClass is immutable once set",
      rule: "!has(oldSelf.snapshotCompatibilityClass) || (has(self.snapshotCompatibilityClass) && self.snapshotCompatibilityClass == oldSelf.snapshotCompatibilityClass)",
    },
    ...cocoonSetSpecRules,
  ],
};

const cocoonSetStatusSchema: JSONSchemaProps = {
  description: "CocoonSetStatus represents the observed state of a CocoonSet.",
  type: "object",
  properties: {
    agents: {
      type: "array",
      items: {
        description: "AgentStatus represents the observed state of a single agent VM.",
        type: "object",
        properties: {
          forkedFrom: str,
          ip: str,
          phase: str,
          podName: str,
          role: str,
          slot: int32(),
          vmID: str,
          vmName: str,
        },
        required: ["role", "slot"],
      },
      "x-kubernetes-list-map-keys": ["slot"],
      "x-kubernetes-list-type": "map",
    },
    conditions: conditionListSchema,
    desiredAgents: int32(),
    desiredToolboxes: int32(),
    expireAt: {
      description: `ExpireAt echoes the set's cocoonset.cocoonstack.io/expire-at annotation while
its expiry policy is valid: at that time the set is suspended or deleted.`,
      format: "date-time",
      type: "string",
    },
    expiryNoticedAt: {
      description: `ExpiryNoticedAt is when the operator gave the ExpiringSoon warning for the
current expireAt. An expire-action Delete happens no sooner than
cocoonset.cocoonstack.io/expire-delete-grace after it.`,
      format: "date-time",
      type: "string",
    },
    idleClockStart: {
      description: `IdleClockStart is when the set last became Running or the operator first saw
its current spec generation; idle time counts from the later of this and the
cocoonset.cocoonstack.io/last-activity annotation. Set only with suspend-after-idle.`,
      format: "date-time",
      type: "string",
    },
    idleSuspendNoticedFor: {
      description: `IdleSuspendNoticedFor is the idleSuspendAt the operator gave its
IdleSuspendSoon warning for (cocoonset.cocoonstack.io/notice-before ahead of it).`,
      format: "date-time",
      type: "string",
    },
    idleSuspendAt: {
      description: `IdleSuspendAt is when the operator will set spec.suspend if the set stays idle
(cocoonset.cocoonstack.io/suspend-after-idle). Set only while the set is Running.`,
      format: "date-time",
      type: "string",
    },
    observedGeneration: int64,
    phase: {
      description: "CocoonSetPhase represents the lifecycle phase of a CocoonSet.",
      enum: [...COCOONSET_PHASES],
      type: "string",
    },
    readyAgents: int32(),
    readyToolboxes: int32(),
    toolboxes: {
      type: "array",
      items: {
        description: "ToolboxStatus represents the observed state of a single toolbox VM.",
        type: "object",
        properties: {
          connType: connTypeSchema,
          ip: str,
          name: str,
          phase: str,
          podName: str,
          vmID: str,
          vmName: str,
          vncPort: int32(),
        },
        required: ["name"],
      },
      "x-kubernetes-list-map-keys": ["name"],
      "x-kubernetes-list-type": "map",
    },
  },
};

const ageColumn: PrinterColumn = { jsonPath: ".metadata.creationTimestamp", name: "Age", type: "date" };

/** One namespaced kind of the group, in the layout every CRD of this repository shares. */
export function crd(
  kind: string,
  plural: string,
  shortName: string,
  printerColumns: PrinterColumn[],
  openAPIV3Schema: JSONSchemaProps,
  /** Columns beyond upstream's go after Age, so the upstream columns keep their places. */
  columnsAfterAge: PrinterColumn[] = [],
  version: string = VERSION,
): CustomResourceDefinition {
  const singular = kind.toLowerCase();
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: {
        categories: ["cocoon"],
        kind,
        listKind: `${kind}List`,
        plural,
        shortNames: [shortName, plural],
        singular,
      },
      scope: "Namespaced",
      versions: [
        {
          additionalPrinterColumns: [...printerColumns, ageColumn, ...columnsAfterAge],
          name: version,
          schema: { openAPIV3Schema },
          served: true,
          storage: true,
          subresources: { status: {} },
        },
      ],
    },
  };
}

export const cocoonSetCRD: CustomResourceDefinition = crd(
  KIND_COCOONSET,
  PLURAL_COCOONSETS,
  "cs",
  [
    { jsonPath: ".status.phase", name: "Phase", type: "string" },
    { jsonPath: ".status.readyAgents", name: "Ready", type: "integer" },
    { jsonPath: ".status.desiredAgents", name: "Desired", type: "integer" },
  ],
  {
    description: "CocoonSet is the Schema for the cocoonsets API.",
    type: "object",
    properties: { ...typeMetaProperties, spec: cocoonSetSpecSchema, status: cocoonSetStatusSchema },
  },
  // After Age, so the upstream columns keep their places: when the idle policy will suspend the set.
  [{ jsonPath: ".status.idleSuspendAt", name: "Idle-Suspend", type: "string" }],
);

export const cocoonHibernationCRD: CustomResourceDefinition = crd(
  KIND_COCOONHIBERNATION,
  PLURAL_COCOONHIBERNATIONS,
  "ch",
  [
    { jsonPath: ".spec.podRef.name", name: "Pod", type: "string" },
    { jsonPath: ".spec.desire", name: "Desire", type: "string" },
    { jsonPath: ".status.phase", name: "Phase", type: "string" },
  ],
  {
    description: "CocoonHibernation is the Schema for the cocoonhibernations API.",
    type: "object",
    properties: {
      ...typeMetaProperties,
      spec: {
        description: "CocoonHibernationSpec defines the desired state of a CocoonHibernation.",
        type: "object",
        properties: {
          desire: {
            description: "HibernationDesire defines the desired hibernation state.",
            enum: [...HIBERNATION_DESIRES],
            type: "string",
          },
          podRef: {
            description: "HibernationPodRef identifies the target pod for hibernation.",
            type: "object",
            properties: { name: { minLength: 1, type: "string" } },
            required: ["name"],
            "x-kubernetes-validations": [{ message: "spec.podRef is immutable", rule: "self == oldSelf" }],
          },
        },
        required: ["desire", "podRef"],
      },
      status: {
        description: "CocoonHibernationStatus represents the observed state of a CocoonHibernation.",
        type: "object",
        properties: {
          conditions: conditionListSchema,
          observedGeneration: int64,
          phase: {
            description: "CocoonHibernationPhase represents the lifecycle phase of a CocoonHibernation.",
            enum: [...HIBERNATION_PHASES],
            type: "string",
          },
          vmName: str,
        },
      },
    },
    "x-kubernetes-validations": cocoonHibernationRootRules,
  },
);

/** Each CRD with the file name controller-gen gives it under config/crd/bases/. */
export const crdFiles: { file: string; crd: CustomResourceDefinition }[] = [
  { file: `${GROUP}_${PLURAL_COCOONHIBERNATIONS}.yaml`, crd: cocoonHibernationCRD },
  { file: `${GROUP}_${PLURAL_COCOONSETS}.yaml`, crd: cocoonSetCRD },
];
