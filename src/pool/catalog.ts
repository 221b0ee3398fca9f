// The CocoonPool and CocoonClaim caches, and the cached reads the pool and claim reconcilers share:
// a pool's unclaimed members, the sets bound to claims, the claims naming a pool.

import type { CocoonSet } from "../apis/v1/types.ts";
import {
  type CocoonClaim,
  type CocoonPool,
  KIND_COCOONCLAIM,
  KIND_COCOONPOOL,
} from "../apis/v1alpha1/types.ts";
import type { Clock } from "../clock.ts";
import { createInformer, type Informer, stripManagedFields } from "../controller/cache.ts";
import type { WatchClient } from "../controller/client.ts";
import { COCOONCLAIMS, COCOONPOOLS } from "../controller/resources.ts";
import { controllerIndexKey, SET_BY_CONTROLLER_INDEX } from "../informers/informers.ts";
import { LABEL_CLAIM, LABEL_CLAIMED_FROM, LABEL_POOL } from "./keys.ts";

/** Claims by `<namespace>/<spec.poolRef.name>`. */
const CLAIM_BY_POOL_INDEX = "pool";

const poolKey = (namespace: string, pool: string): string => `${namespace}/${pool}`;

/** The cached reads of the pool and claim reconcilers (read only: never edit what they return). */
export interface PoolView {
  pool(namespace: string, name: string): CocoonPool | undefined;
  claim(namespace: string, name: string): CocoonClaim | undefined;
  /** The pool's unclaimed members: controlled by it and carrying its label. */
  members(namespace: string, pool: string): CocoonSet[];
  /** The set bound to the claim: controlled by it and carrying its label. */
  boundSet(namespace: string, claim: string): CocoonSet | undefined;
  set(namespace: string, name: string): CocoonSet | undefined;
  /** The sets claimed from the pool: bound to claims, labelled with the pool they came from. */
  claimed(namespace: string, pool: string): CocoonSet[];
}

export class PoolCatalog implements PoolView {
  readonly pools: Informer<CocoonPool>;
  readonly claims: Informer<CocoonClaim>;
  private readonly sets: Informer<CocoonSet>;
  private available = false;

  constructor(
    client: WatchClient,
    sets: Informer<CocoonSet>,
    opts: { clock?: Clock; namespace?: string } = {},
  ) {
    this.sets = sets;
    this.pools = createInformer<CocoonPool>(client, COCOONPOOLS, { ...opts, transform: stripManagedFields });
    this.claims = createInformer<CocoonClaim>(client, COCOONCLAIMS, {
      ...opts,
      transform: stripManagedFields,
      indexers: {
        [CLAIM_BY_POOL_INDEX]: (claim) => [
          poolKey(claim.metadata.namespace ?? "", claim.spec?.poolRef?.name ?? ""),
        ],
      },
    });
  }

  /** Once the probe found both kinds served and the controllers are set up. */
  markAvailable(): void {
    this.available = true;
  }

  get isAvailable(): boolean {
    return this.available;
  }

  pool(namespace: string, name: string): CocoonPool | undefined {
    return this.pools.get(namespace, name);
  }

  claim(namespace: string, name: string): CocoonClaim | undefined {
    return this.claims.get(namespace, name);
  }

  members(namespace: string, pool: string): CocoonSet[] {
    return this.sets
      .byIndex(SET_BY_CONTROLLER_INDEX, controllerIndexKey(namespace, KIND_COCOONPOOL, pool))
      .filter((cs) => cs.metadata.labels?.[LABEL_POOL] === pool);
  }

  set(namespace: string, name: string): CocoonSet | undefined {
    return this.sets.get(namespace, name);
  }

  boundSet(namespace: string, claim: string): CocoonSet | undefined {
    return this.sets
      .byIndex(SET_BY_CONTROLLER_INDEX, controllerIndexKey(namespace, KIND_COCOONCLAIM, claim))
      .find((cs) => cs.metadata.labels?.[LABEL_CLAIM] === claim);
  }

  claimed(namespace: string, pool: string): CocoonSet[] {
    return this.sets.list(namespace).filter((cs) => cs.metadata.labels?.[LABEL_CLAIMED_FROM] === pool);
  }

  claimsOfPool(namespace: string, pool: string): CocoonClaim[] {
    return this.claims.byIndex(CLAIM_BY_POOL_INDEX, poolKey(namespace, pool));
  }
}
