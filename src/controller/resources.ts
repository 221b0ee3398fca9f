// The API resources the operator talks to, and how their REST paths are built.

import { GROUP, VERSION } from "../apis/v1/types.ts";
import {
  KIND_COCOONCLAIM,
  KIND_COCOONGUESTPOLICY,
  KIND_COCOONPOOL,
  KIND_COCOONRESTORE,
  PLURAL_COCOONCHECKPOINTS,
  PLURAL_COCOONCLAIMS,
  PLURAL_COCOONGUESTPOLICIES,
  PLURAL_COCOONPOOLS,
  PLURAL_COCOONRESTORES,
  VERSION_V1ALPHA1,
} from "../apis/v1alpha1/types.ts";

export interface ResourceType {
  /** API group; "" for the core group. */
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

export const PODS: ResourceType = { group: "", version: "v1", plural: "pods", kind: "Pod", namespaced: true };
export const NODES: ResourceType = {
  group: "",
  version: "v1",
  plural: "nodes",
  kind: "Node",
  namespaced: false,
};
export const EVENTS: ResourceType = {
  group: "",
  version: "v1",
  plural: "events",
  kind: "Event",
  namespaced: true,
};
export const LEASES: ResourceType = {
  group: "coordination.k8s.io",
  version: "v1",
  plural: "leases",
  kind: "Lease",
  namespaced: true,
};
export const COCOONSETS: ResourceType = {
  group: GROUP,
  version: VERSION,
  plural: "cocoonsets",
  kind: "CocoonSet",
  namespaced: true,
};
export const COCOONHIBERNATIONS: ResourceType = {
  group: GROUP,
  version: VERSION,
  plural: "cocoonhibernations",
  kind: "CocoonHibernation",
  namespaced: true,
};

export const COCOONCHECKPOINTS: ResourceType = {
  group: GROUP,
  version: VERSION_V1ALPHA1,
  plural: PLURAL_COCOONCHECKPOINTS,
  kind: "CocoonCheckpoint",
  namespaced: true,
};

export const COCOONPOOLS: ResourceType = {
  group: GROUP,
  version: VERSION_V1ALPHA1,
  plural: PLURAL_COCOONPOOLS,
  kind: KIND_COCOONPOOL,
  namespaced: true,
};

export const COCOONCLAIMS: ResourceType = {
  group: GROUP,
  version: VERSION_V1ALPHA1,
  plural: PLURAL_COCOONCLAIMS,
  kind: KIND_COCOONCLAIM,
  namespaced: true,
};

export const COCOONRESTORES: ResourceType = {
  group: GROUP,
  version: VERSION_V1ALPHA1,
  plural: PLURAL_COCOONRESTORES,
  kind: KIND_COCOONRESTORE,
  namespaced: true,
};

export const COCOONGUESTPOLICIES: ResourceType = {
  group: GROUP,
  version: VERSION_V1ALPHA1,
  plural: PLURAL_COCOONGUESTPOLICIES,
  kind: KIND_COCOONGUESTPOLICY,
  namespaced: true,
};

// The reviews of the secure metrics server (metricsauth.ts): create only, cluster-scoped.
export const TOKENREVIEWS: ResourceType = {
  group: "authentication.k8s.io",
  version: "v1",
  plural: "tokenreviews",
  kind: "TokenReview",
  namespaced: false,
};

export const SUBJECTACCESSREVIEWS: ResourceType = {
  group: "authorization.k8s.io",
  version: "v1",
  plural: "subjectaccessreviews",
  kind: "SubjectAccessReview",
  namespaced: false,
};

/** "v1" for core, "group/version" otherwise. */
export function apiVersionOf(rt: ResourceType): string {
  return rt.group === "" ? rt.version : `${rt.group}/${rt.version}`;
}

/** The REST path of a collection (no name) or of one object, optionally a subresource of it. */
export function resourcePath(
  rt: ResourceType,
  namespace: string | undefined,
  name?: string,
  subresource?: string,
): string {
  let path = rt.group === "" ? `/api/${rt.version}` : `/apis/${rt.group}/${rt.version}`;
  if (rt.namespaced && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${rt.plural}`;
  if (name !== undefined) path += `/${encodeURIComponent(name)}`;
  if (subresource !== undefined) path += `/${subresource}`;
  return path;
}
