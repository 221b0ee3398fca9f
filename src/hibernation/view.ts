// The reads of the CocoonHibernation reconciler (CRs from their cache, named pods from podwatch.ts),
// and the CR informer index the pod watch needs to map a pod event back to the CRs that target it.

import type { Pod } from "../apis/core.ts";
import type { CocoonHibernation } from "../apis/v1/types.ts";
import type { Informer } from "../controller/cache.ts";
import type { IndexFunc } from "../controller/store.ts";

export interface HibernationView {
  getHibernation(namespace: string, name: string): CocoonHibernation | undefined;
  /** The pod a CR names; undefined when it does not exist. */
  getPod(namespace: string, name: string): Promise<Pod | undefined>;
  listHibernations(namespace: string): CocoonHibernation[];
}

/**
 * Index name on the CocoonHibernation informer. Store indexes are cluster-wide, so the value is
 * `<namespace>/<spec.podRef.name>` (the Go field index is per namespace).
 */
export const POD_REF_INDEX = "spec.podRef.name";

export function podRefIndexKey(namespace: string, podName: string): string {
  return `${namespace}/${podName}`;
}

const byPodRef: IndexFunc<CocoonHibernation> = (ch) => [
  podRefIndexKey(ch.metadata.namespace ?? "", ch.spec?.podRef?.name ?? ""),
];

/** Pass as `indexers` when creating the CocoonHibernation informer. */
export const hibernationIndexers: Record<string, IndexFunc<CocoonHibernation>> = {
  [POD_REF_INDEX]: byPodRef,
};

export interface HibernationInformers {
  hibernations: Informer<CocoonHibernation>;
}

export function informerView(
  informers: HibernationInformers,
  pods: { getPod(namespace: string, name: string): Promise<Pod | undefined> },
): HibernationView {
  return {
    getHibernation: (namespace, name) => informers.hibernations.get(namespace, name),
    getPod: (namespace, name) => pods.getPod(namespace, name),
    listHibernations: (namespace) => informers.hibernations.list(namespace),
  };
}
