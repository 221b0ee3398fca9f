// The CocoonRestore cache: the restores by name and by the set they name.

import type { CocoonRestore } from "../apis/v1alpha1/types.ts";
import type { Clock } from "../clock.ts";
import { createInformer, type Informer, stripManagedFields } from "../controller/cache.ts";
import type { WatchClient } from "../controller/client.ts";
import { COCOONRESTORES } from "../controller/resources.ts";

/** Restores by `<namespace>/<spec.cocoonSetRef.name>`. */
const RESTORE_BY_SET_INDEX = "cocoonset";

const setKey = (namespace: string, setName: string): string => `${namespace}/${setName}`;

export class RestoreCatalog {
  readonly informer: Informer<CocoonRestore>;

  constructor(client: WatchClient, opts: { clock?: Clock; namespace?: string } = {}) {
    this.informer = createInformer<CocoonRestore>(client, COCOONRESTORES, {
      ...opts,
      transform: stripManagedFields,
      indexers: {
        [RESTORE_BY_SET_INDEX]: (r) => [setKey(r.metadata.namespace ?? "", r.spec?.cocoonSetRef?.name ?? "")],
      },
    });
  }

  /** The cache's object (read only). */
  getRestore(namespace: string, name: string): CocoonRestore | undefined {
    return this.informer.get(namespace, name);
  }

  /** The restores naming the set, as cached (read only). */
  restoresOfSet(namespace: string, setName: string): readonly CocoonRestore[] {
    return this.informer.byIndex(RESTORE_BY_SET_INDEX, setKey(namespace, setName));
  }

  listRestores(namespace: string): readonly CocoonRestore[] {
    return this.informer.list(namespace);
  }
}
