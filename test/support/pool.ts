// Fixtures for the warm-pool unit tests (test/unit/pool/): a pool and claims in namespace "ns", a
// member set as the pool makes it and as vk-cocoon and the CocoonSet controller later report it, and
// the reconcilers' dependencies over FakeClient, read through a view that can lag behind the store.

import type { CocoonSet, CocoonSetPhase } from "../../src/apis/v1/types.ts";
import {
  API_VERSION_V1ALPHA1,
  type CocoonClaim,
  type CocoonPool,
  type CocoonPoolSpec,
  KIND_COCOONCLAIM,
  KIND_COCOONPOOL,
} from "../../src/apis/v1alpha1/types.ts";
import { FakeClock } from "../../src/clock.ts";
import { COCOONCLAIMS, COCOONPOOLS, COCOONSETS } from "../../src/controller/resources.ts";
import type { PoolView } from "../../src/pool/catalog.ts";
import { newMember } from "../../src/pool/decide.ts";
import { MemberExpectations } from "../../src/pool/expectations.ts";
import { LABEL_CLAIM, LABEL_CLAIMED_FROM, LABEL_POOL } from "../../src/pool/keys.ts";
import { RecordingEvents } from "./events.ts";
import { FakeClient } from "./fakeclient.ts";
import { silentLogger } from "./log.ts";

export const NS = "ns";
export const POOL = "warm";

export function cocoonPool(
  spec: Partial<CocoonPoolSpec> = {},
  metadata: Partial<CocoonPool["metadata"]> = {},
): CocoonPool {
  return {
    apiVersion: API_VERSION_V1ALPHA1,
    kind: KIND_COCOONPOOL,
    metadata: { name: POOL, namespace: NS, uid: "pool-uid", generation: 1, ...metadata },
    spec: {
      replicas: 3,
      warmth: "Running",
      template: { spec: { agent: { image: "ubuntu", replicas: 0, mode: "clone" } } },
      ...spec,
    },
  };
}

export function cocoonClaim(name: string, metadata: Partial<CocoonClaim["metadata"]> = {}): CocoonClaim {
  return {
    apiVersion: API_VERSION_V1ALPHA1,
    kind: KIND_COCOONCLAIM,
    metadata: { name, namespace: NS, uid: `${name}-uid`, generation: 1, ...metadata },
    spec: { poolRef: { name: POOL } },
  };
}

/**
 * The pool's member `name` in `phase` at its generation (settled), created at `created` (seconds
 * after a fixed start, so tests order members by age). `suspended` sets spec.suspend.
 */
export function member(
  pool: CocoonPool,
  name: string,
  phase: CocoonSetPhase | undefined,
  opts: { created?: number; suspended?: boolean; uid?: string } = {},
): CocoonSet {
  const cs = newMember(pool, name);
  if (opts.suspended) cs.spec.suspend = true;
  cs.metadata.uid = opts.uid ?? `${name}-uid`;
  cs.metadata.generation = 1;
  cs.metadata.resourceVersion = "1";
  cs.metadata.creationTimestamp = new Date(Date.parse("2026-01-01T00:00:00Z") + (opts.created ?? 0) * 1000)
    .toISOString()
    .replace(".000Z", "Z");
  if (phase)
    cs.status = {
      phase,
      observedGeneration: 1,
      readyAgents: 1,
      desiredAgents: 1,
      readyToolboxes: 0,
      desiredToolboxes: 0,
    };
  return cs;
}

/** The reconcilers' cached reads over the fake store, as of `lag` changes ago (a cache behind the API). */
export class FakePoolView implements PoolView {
  lag = 0;
  private readonly client: FakeClient;

  constructor(client: FakeClient) {
    this.client = client;
  }

  private sets(namespace: string): CocoonSet[] {
    return this.client.all<CocoonSet>(COCOONSETS, namespace, this.lag);
  }

  pool(namespace: string, name: string): CocoonPool | undefined {
    return this.client.peek<CocoonPool>(COCOONPOOLS, namespace, name, this.lag);
  }

  claim(namespace: string, name: string): CocoonClaim | undefined {
    return this.client.peek<CocoonClaim>(COCOONCLAIMS, namespace, name, this.lag);
  }

  members(namespace: string, pool: string): CocoonSet[] {
    return this.sets(namespace).filter(
      (cs) =>
        cs.metadata.labels?.[LABEL_POOL] === pool &&
        cs.metadata.ownerReferences?.some(
          (ref) => ref.controller && ref.kind === KIND_COCOONPOOL && ref.name === pool,
        ),
    );
  }

  boundSet(namespace: string, claim: string): CocoonSet | undefined {
    return this.sets(namespace).find(
      (cs) =>
        cs.metadata.labels?.[LABEL_CLAIM] === claim &&
        cs.metadata.ownerReferences?.some(
          (ref) => ref.controller && ref.kind === KIND_COCOONCLAIM && ref.name === claim,
        ),
    );
  }

  set(namespace: string, name: string): CocoonSet | undefined {
    return this.client.peek<CocoonSet>(COCOONSETS, namespace, name, this.lag);
  }

  claimed(namespace: string, pool: string): CocoonSet[] {
    return this.sets(namespace).filter((cs) => cs.metadata.labels?.[LABEL_CLAIMED_FROM] === pool);
  }
}

export function poolHarness() {
  const client = new FakeClient();
  const view = new FakePoolView(client);
  const events = new RecordingEvents();
  const clock = new FakeClock();
  const expectations = new MemberExpectations(clock);
  const log = silentLogger();
  return { client, view, events, clock, expectations, log };
}
