// What the pods informer keeps of a pod: the fields nothing reads are dropped and the repeated strings
// of the rest are shared, so a cache of many pods stays small (BENCHMARKS.md, memory).

import type { Pod } from "../apis/core.ts";
import { omitKeys, stripManagedFields } from "../controller/cache.ts";
import { intern, internStrings } from "../controller/intern.ts";

/**
 * The pods informer's transform: the fields nothing reads dropped (stripUnreadPodFields), and the
 * repeated strings of the rest shared (src/controller/intern.ts). Name, uid, resourceVersion and
 * creationTimestamp are unique to a pod and stay as parsed.
 */
export function compactCachedPod(pod: Pod): Pod {
  stripUnreadPodFields(pod);
  const meta = pod.metadata;
  if (meta.namespace !== undefined) meta.namespace = intern(meta.namespace);
  internStrings(meta.labels);
  internStrings(meta.annotations);
  internStrings(meta.ownerReferences);
  internStrings(meta.finalizers);
  internStrings(pod.spec);
  internStrings(pod.status);
  return pod;
}

/**
 * Besides managedFields, drops pod fields that nothing in the operator reads (the Pod type in
 * src/apis/core.ts declares none of them except imageID, and no code reads that; the pod predicates
 * read phase, conditions, labels, annotations and deletionTimestamp; of containerStatuses only
 * state.running is read, in src/contract/pod.ts). Cached pods are never written back whole (pods are
 * only created, merge-patched and deleted), so nothing dropped here can be lost on the server. Dropped:
 * - spec.volumes and spec.containers[].volumeMounts (in a real cluster, the service-account token volume);
 * - status.containerStatuses[]: imageID, containerID, lastState, volumeMounts, allocatedResources,
 *   resources, user.
 * Objects that lose a field are rebuilt without it (omitKeys), never `delete`d from.
 */
export function stripUnreadPodFields(pod: Pod): Pod {
  stripManagedFields(pod);
  const holder = pod as unknown as {
    spec?: { volumes?: unknown; containers?: object[] };
    status?: PodStatusShape;
  };
  if (holder.spec && "volumes" in holder.spec) holder.spec = omitKeys(holder.spec, ["volumes"]);
  const containers = holder.spec?.containers;
  if (containers) {
    for (let i = 0; i < containers.length; i++) {
      const container = containers[i] as object;
      if ("volumeMounts" in container) containers[i] = omitKeys(container, ["volumeMounts"]);
    }
  }
  const statuses = holder.status?.containerStatuses;
  if (statuses) {
    for (let i = 0; i < statuses.length; i++) {
      const cs = statuses[i] as object;
      if (UNREAD_CONTAINER_STATUS_FIELDS.some((field) => field in cs)) {
        statuses[i] = omitKeys(cs, UNREAD_CONTAINER_STATUS_FIELDS);
      }
    }
  }
  return pod;
}

interface PodStatusShape {
  containerStatuses?: object[];
}

const UNREAD_CONTAINER_STATUS_FIELDS = [
  "imageID",
  "containerID",
  "lastState",
  "volumeMounts",
  "allocatedResources",
  "resources",
  "user",
] as const;
