// The CocoonGuestPolicy cache. Until a probe found the kind served (src/controller/served.ts) it holds
// nothing, and a set naming a policy reads as naming one that does not exist.

import type { CocoonGuestPolicy } from "../apis/v1alpha1/types.ts";
import type { Clock } from "../clock.ts";
import { createInformer, type Informer, stripManagedFields } from "../controller/cache.ts";
import type { WatchClient } from "../controller/client.ts";
import { COCOONGUESTPOLICIES } from "../controller/resources.ts";

export class GuestPolicyCatalog {
  readonly informer: Informer<CocoonGuestPolicy>;

  constructor(client: WatchClient, opts: { clock?: Clock; namespace?: string } = {}) {
    this.informer = createInformer<CocoonGuestPolicy>(client, COCOONGUESTPOLICIES, {
      ...opts,
      transform: stripManagedFields,
    });
  }

  /** The cache's object (read only); undefined when there is none of that name. */
  policy(namespace: string, name: string): CocoonGuestPolicy | undefined {
    return this.informer.get(namespace, name);
  }
}
