// CocoonSet and CocoonHibernation, group cocoonset.cocoonstack.io/v1.
// Field names and optionality follow the Go types: an absent field is the Go zero value.

export const GROUP = "cocoonset.cocoonstack.io";
export const VERSION = "v1";
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND_COCOONSET = "CocoonSet";
export const KIND_COCOONHIBERNATION = "CocoonHibernation";
export const PLURAL_COCOONSETS = "cocoonsets";
export const PLURAL_COCOONHIBERNATIONS = "cocoonhibernations";

/** The parts of Kubernetes ObjectMeta the operator reads and writes. */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** metav1.Condition. */
export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

// ---- enums: IsValid = exact membership, empty is invalid ----

export const AGENT_MODES = ["clone", "run"] as const;
export type AgentMode = (typeof AGENT_MODES)[number];
export const TOOLBOX_MODES = ["run", "clone", "static"] as const;
export type ToolboxMode = (typeof TOOLBOX_MODES)[number];
export const OS_TYPES = ["linux", "windows", "android", "macos"] as const;
export type OSType = (typeof OS_TYPES)[number];
export const BACKENDS = ["cloud-hypervisor", "firecracker"] as const;
export type Backend = (typeof BACKENDS)[number];
export const CONN_TYPES = ["ssh", "rdp", "vnc", "adb"] as const;
export type ConnType = (typeof CONN_TYPES)[number];
export const SNAPSHOT_POLICIES = ["always", "main-only", "never"] as const;
export type SnapshotPolicy = (typeof SNAPSHOT_POLICIES)[number];
export const HIBERNATE_POLICIES = ["retain", "release"] as const;
export type HibernatePolicy = (typeof HIBERNATE_POLICIES)[number];
export const COCOONSET_PHASES = [
  "Pending",
  "Running",
  "Scaling",
  "Suspending",
  "Suspended",
  "Waking",
  "Migrating",
  "Failed",
] as const;
export type CocoonSetPhase = (typeof COCOONSET_PHASES)[number];
export const HIBERNATION_DESIRES = ["Hibernate", "Wake"] as const;
export type HibernationDesire = (typeof HIBERNATION_DESIRES)[number];
export const HIBERNATION_PHASES = [
  "Pending",
  "Hibernating",
  "Hibernated",
  "Waking",
  "Active",
  "Failed",
] as const;
export type CocoonHibernationPhase = (typeof HIBERNATION_PHASES)[number];

export const DEFAULT_AGENT_MODE: AgentMode = "clone";
export const DEFAULT_TOOLBOX_MODE: ToolboxMode = "run";
export const DEFAULT_OS: OSType = "linux";
export const DEFAULT_BACKEND: Backend = "cloud-hypervisor";
export const DEFAULT_SNAPSHOT_POLICY: SnapshotPolicy = "always";
export const DEFAULT_HIBERNATE_POLICY: HibernatePolicy = "retain";
export const DEFAULT_NODE_POOL = "default";

/** Exact membership, as the Go IsValid(): the empty string and any other case are invalid. */
export function isValid<T extends string>(values: readonly T[], value: string | undefined): value is T {
  return value !== undefined && (values as readonly string[]).includes(value);
}

/** The Go Default(): the value when non-empty, the default otherwise (an unknown value is kept). */
export function withDefault<T extends string>(value: string | undefined, fallback: T): string {
  return value ? value : fallback;
}

// ---- core/v1 shapes carried inside the spec ----

export type Quantity = string | number;

export interface ResourceRequirements {
  limits?: Record<string, Quantity>;
  requests?: Record<string, Quantity>;
  claims?: { name: string; request?: string }[];
}

export interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name?: string; optional?: boolean };
  secretRef?: { name?: string; optional?: boolean };
}

// ---- CocoonSet ----

/** VMOptions, inlined into the agent and every toolbox. */
export interface VMOptions {
  os?: string;
  backend?: string;
  connType?: string;
  network?: string;
  forcePull?: boolean;
  noDirectIO?: boolean;
  probePort?: number;
  storage?: Quantity;
  resources?: ResourceRequirements;
}

export interface AgentSpec extends VMOptions {
  replicas?: number;
  image: string;
  mode?: string;
  envFrom?: EnvFromSource[];
  serviceAccountName?: string;
}

export interface ToolboxSpec extends VMOptions {
  name: string;
  image?: string;
  mode?: string;
  staticIP?: string;
  staticVMID?: string;
  vncPort?: number;
}

export interface CocoonSetSpec {
  suspend?: boolean;
  snapshotPolicy?: string;
  hibernatePolicy?: string;
  nodePool?: string;
  snapshotCompatibilityClass?: string;
  nodeName?: string;
  agent: AgentSpec;
  toolboxes?: ToolboxSpec[];
}

export interface AgentStatus {
  slot: number;
  role: string;
  podName?: string;
  vmName?: string;
  vmID?: string;
  ip?: string;
  phase?: string;
  forkedFrom?: string;
}

export interface ToolboxStatus {
  name: string;
  podName?: string;
  vmName?: string;
  vmID?: string;
  ip?: string;
  phase?: string;
  connType?: string;
  vncPort?: number;
}

export interface CocoonSetStatus {
  observedGeneration?: number;
  phase?: CocoonSetPhase;
  readyAgents: number;
  desiredAgents: number;
  readyToolboxes: number;
  desiredToolboxes: number;
  agents?: AgentStatus[];
  toolboxes?: ToolboxStatus[];
  conditions?: Condition[];
  /** RFC 3339: start of the idle clock (src/idle/deadlines.ts); only with suspend-after-idle. */
  idleClockStart?: string;
  /** RFC 3339: when the set will be suspended for idleness if nobody uses it. */
  idleSuspendAt?: string;
  /** RFC 3339: the set's expire-at, when its expiry policy is valid. */
  expireAt?: string;
  /** RFC 3339: when the ExpiringSoon notice of that expire-at was given. */
  expiryNoticedAt?: string;
  /** RFC 3339: the idleSuspendAt whose IdleSuspendSoon notice was given. */
  idleSuspendNoticedFor?: string;
}

export interface CocoonSet {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND_COCOONSET;
  metadata: ObjectMeta;
  spec: CocoonSetSpec;
  status?: CocoonSetStatus;
}

// ---- CocoonHibernation ----

export interface CocoonHibernationSpec {
  podRef: { name: string };
  desire: HibernationDesire;
}

export interface CocoonHibernationStatus {
  observedGeneration?: number;
  phase?: CocoonHibernationPhase;
  vmName?: string;
  conditions?: Condition[];
}

export interface CocoonHibernation {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND_COCOONHIBERNATION;
  metadata: ObjectMeta;
  spec: CocoonHibernationSpec;
  status?: CocoonHibernationStatus;
}
