// The parts of core/v1 Pod, Node and Event the operator and its test environment read and write, as
// plain JSON (timestamps are RFC 3339 strings, as on the wire). Fields not listed here are still
// carried through untouched when an object is read and written back.

import type { EnvFromSource, ObjectMeta, ResourceRequirements } from "./v1/types.ts";

export interface Toleration {
  key?: string;
  operator?: "Exists" | "Equal";
  value?: string;
  effect?: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  tolerationSeconds?: number;
}

export interface NodeSelectorRequirement {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt";
  values?: string[];
}

export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

export interface NodeAffinity {
  requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms: NodeSelectorTerm[] };
  preferredDuringSchedulingIgnoredDuringExecution?: { weight: number; preference: NodeSelectorTerm }[];
}

export interface Container {
  name: string;
  image?: string;
  imagePullPolicy?: string;
  resources?: ResourceRequirements;
  envFrom?: EnvFromSource[];
  ports?: { containerPort: number; name?: string; protocol?: string }[];
}

export interface PodSpec {
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  affinity?: { nodeAffinity?: NodeAffinity };
  tolerations?: Toleration[];
  containers: Container[];
  serviceAccountName?: string;
  terminationGracePeriodSeconds?: number;
  restartPolicy?: string;
  schedulerName?: string;
}

export interface PodCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastProbeTime?: string | null;
}

export interface ContainerStatus {
  name: string;
  image?: string;
  imageID?: string;
  ready: boolean;
  started?: boolean;
  restartCount: number;
  state?: {
    running?: { startedAt?: string };
    waiting?: { reason?: string; message?: string };
    terminated?: {
      exitCode: number;
      reason?: string;
      message?: string;
      startedAt?: string;
      finishedAt?: string;
    };
  };
}

export interface PodStatus {
  phase?: "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";
  conditions?: PodCondition[];
  containerStatuses?: ContainerStatus[];
  hostIP?: string;
  podIP?: string;
  startTime?: string;
  reason?: string;
  message?: string;
}

export interface Pod {
  apiVersion?: "v1";
  kind?: "Pod";
  metadata: ObjectMeta & { deletionGracePeriodSeconds?: number };
  spec: PodSpec;
  status?: PodStatus;
}
