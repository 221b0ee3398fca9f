// The CocoonSet reconciler's reads, over the operator's informers (src/informers/).

import type { Pod } from "../apis/core.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import { deepCopyJson } from "../controller/deepcopy.ts";
import {
  type OperatorInformers,
  POD_BY_COCOONSET_INDEX,
  SET_BY_VM_NAME_INDEX,
} from "../informers/informers.ts";
import type { CachedHibernation, CocoonSetView } from "../pass/pass.ts";

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

  listSetsNamingVM(vm: string): readonly CocoonSet[] {
    return this.informers.cocoonSets.byIndex(SET_BY_VM_NAME_INDEX, vm);
  }
}
