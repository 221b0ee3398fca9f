// The informers the operator's controllers read from, and the CocoonSet reconciler's view over them.
// Pods are cached only when they carry the CocoonSet name label: every pod the operator manages does,
// and the rest of the cluster's pods are none of its business.

import type { Pod } from "../apis/core.ts";
import type { CocoonHibernation, CocoonSet } from "../apis/v1/types.ts";
import type { Clock } from "../clock.ts";
import { LABEL_COCOONSET } from "../contract/keys.ts";
import { createInformer, type Informer, omitKeys, stripManagedFields } from "../controller/cache.ts";
import type { WatchClient } from "../controller/client.ts";
import { deepCopyJson } from "../controller/deepcopy.ts";
import { intern, internStrings } from "../controller/intern.ts";
import { COCOONHIBERNATIONS, COCOONSETS, PODS } from "../controller/resources.ts";
import { hibernationIndexers } from "../hibernation/view.ts";
import type { CachedHibernation, CocoonSetView } from "./pass.ts";

/** Pods by `<namespace>/<cocoonset name label>`. */
export const POD_BY_COCOONSET_INDEX = "cocoonset";

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

export interface OperatorInformers {
  cocoonSets: Informer<CocoonSet>;
  pods: Informer<Pod>;
  hibernations: Informer<CocoonHibernation>;
}

/** `namespace` limits every informer to one namespace (tests sharing an API server); default all. */
export function createOperatorInformers(
  client: WatchClient,
  opts: { clock?: Clock; namespace?: string } = {},
): OperatorInformers {
  const { clock, namespace } = opts;
  return {
    cocoonSets: createInformer<CocoonSet>(client, COCOONSETS, {
      namespace,
      transform: stripManagedFields,
      clock,
    }),
    pods: createInformer<Pod>(client, PODS, {
      namespace,
      labelSelector: LABEL_COCOONSET,
      transform: compactCachedPod,
      clock,
      indexers: {
        [POD_BY_COCOONSET_INDEX]: (pod) => {
          const setName = pod.metadata.labels?.[LABEL_COCOONSET];
          return setName === undefined ? [] : [`${pod.metadata.namespace ?? ""}/${setName}`];
        },
      },
    }),
    hibernations: createInformer<CocoonHibernation>(client, COCOONHIBERNATIONS, {
      namespace,
      transform: stripManagedFields,
      clock,
      // The CocoonHibernation controller shares this informer and maps pod events through its index.
      indexers: hibernationIndexers,
    }),
  };
}

/**
 * Cached reads for the CocoonSet reconciler. The set and its pods are handed out as copies: a pass
 * keeps its own writes in step by updating the objects it holds, and those must never be the cache's.
 * CocoonHibernations are only read, so they are handed out as the cache holds them, typed read-only.
 */
export class InformerCocoonSetView implements CocoonSetView {
  private readonly informers: OperatorInformers;

  constructor(informers: OperatorInformers) {
    this.informers = informers;
  }

  getCocoonSet(namespace: string, name: string): CocoonSet | undefined {
    const cs = this.informers.cocoonSets.get(namespace, name);
    return cs ? deepCopyJson(cs) : undefined;
  }

  listSetPods(namespace: string, setName: string): Pod[] {
    return this.informers.pods
      .byIndex(POD_BY_COCOONSET_INDEX, `${namespace}/${setName}`)
      .map((pod) => deepCopyJson(pod));
  }

  listHibernations(namespace: string): readonly CachedHibernation[] {
    return this.informers.hibernations.list(namespace);
  }
}
