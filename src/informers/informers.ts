// The informers the operator's controllers share: CocoonSets, the pods that carry the CocoonSet name
// label, and CocoonHibernations, each with the indexes its readers look up by. Pods are cached only
// when they carry the label: every pod the operator manages does, and the rest of the cluster's pods
// are none of its business. They run on every replica, leader or not, so a standby is warm.

import type { Pod } from "../apis/core.ts";
import type { CocoonHibernation, CocoonSet } from "../apis/v1/types.ts";
import type { Clock } from "../clock.ts";
import { LABEL_COCOONSET } from "../contract/keys.ts";
import { createInformer, type Informer, stripManagedFields } from "../controller/cache.ts";
import type { WatchClient } from "../controller/client.ts";
import { COCOONHIBERNATIONS, COCOONSETS, PODS } from "../controller/resources.ts";
import type { IndexFunc } from "../controller/store.ts";
import { compactCachedPod } from "./compact.ts";

/** Pods by `<namespace>/<cocoonset name label>`. */
export const POD_BY_COCOONSET_INDEX = "cocoonset";

/**
 * CocoonSets by `<namespace>/<kind>/<name>` of their controller ownerReference (a pool owns its
 * unclaimed members, a claim its bound set: docs/pools.md).
 */
export const SET_BY_CONTROLLER_INDEX = "controller";

/**
 * CocoonSets by each VM name they answer for (the index function is the caller's: the names a set
 * answers for are read from its bookkeeping, which rooms below this one decode).
 */
export const SET_BY_VM_NAME_INDEX = "vmName";

export function controllerIndexKey(namespace: string, kind: string, name: string): string {
  return `${namespace}/${kind}/${name}`;
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

export interface OperatorInformers {
  cocoonSets: Informer<CocoonSet>;
  pods: Informer<Pod>;
  hibernations: Informer<CocoonHibernation>;
}

/**
 * `namespace` limits every informer to one namespace (tests sharing an API server); default all.
 * `setVMNames` gives the VM names a set answers for, for SET_BY_VM_NAME_INDEX; default none.
 */
export function createOperatorInformers(
  client: WatchClient,
  opts: { clock?: Clock; namespace?: string; setVMNames?: (cs: CocoonSet) => string[] } = {},
): OperatorInformers {
  const { clock, namespace, setVMNames = () => [] } = opts;
  return {
    cocoonSets: createInformer<CocoonSet>(client, COCOONSETS, {
      namespace,
      transform: stripManagedFields,
      clock,
      indexers: {
        [SET_BY_CONTROLLER_INDEX]: (cs) =>
          (cs.metadata.ownerReferences ?? [])
            .filter((ref) => ref.controller === true)
            .map((ref) => controllerIndexKey(cs.metadata.namespace ?? "", ref.kind, ref.name)),
        [SET_BY_VM_NAME_INDEX]: setVMNames,
      },
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
