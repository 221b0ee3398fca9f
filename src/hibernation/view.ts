// The reads of the CocoonHibernation reconciler: CRs from their cache (indexed by the pod they name,
// src/informers/informers.ts), named pods from podwatch.ts.

import type { Pod } from "../apis/core.ts";
import type { CocoonHibernation } from "../apis/v1/types.ts";
import type { Informer } from "../controller/cache.ts";

export interface HibernationView {
  getHibernation(namespace: string, name: string): CocoonHibernation | undefined;
  /** The pod a CR names; undefined when it does not exist. */
  getPod(namespace: string, name: string): Promise<Pod | undefined>;
  listHibernations(namespace: string): CocoonHibernation[];
}

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
