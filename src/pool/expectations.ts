// The pool's own writes that its member cache may not show yet (client-go's ReplicaSet expectations,
// for sets). A pass right after a create or delete would count the old members and create or delete
// again; while a write is expected the pool waits for the cache instead. A TTL on the injected clock
// ends an expectation the cache never meets (a member deleted by someone else before it was seen).

import type { CocoonSet } from "../apis/v1/types.ts";
import type { Clock } from "../clock.ts";

export const MEMBER_EXPECTATION_TTL_MS = 30_000;

interface Expectation {
  kind: "create" | "delete";
  expiresAt: number;
}

export class MemberExpectations {
  private readonly clock: Clock;
  private readonly ttlMs: number;
  /** By `<namespace>/<pool>`, then member name. */
  private readonly byPool = new Map<string, Map<string, Expectation>>();

  constructor(clock: Clock, ttlMs = MEMBER_EXPECTATION_TTL_MS) {
    this.clock = clock;
    this.ttlMs = ttlMs;
  }

  created(poolKey: string, member: string): void {
    this.expect(poolKey, member, "create");
  }

  deleted(poolKey: string, member: string): void {
    this.expect(poolKey, member, "delete");
  }

  /** True while a write is not in `members` (the pool's cached unclaimed members) yet; met ones are dropped. */
  pending(poolKey: string, members: readonly CocoonSet[]): boolean {
    const expected = this.byPool.get(poolKey);
    if (!expected) return false;
    const now = this.clock.now();
    for (const [name, expectation] of expected) {
      const cached = members.find((cs) => cs.metadata.name === name);
      const met =
        expectation.kind === "create" ? cached !== undefined : !cached || !!cached.metadata.deletionTimestamp;
      if (met || now >= expectation.expiresAt) expected.delete(name);
    }
    if (expected.size === 0) this.byPool.delete(poolKey);
    return expected.size > 0;
  }

  forget(poolKey: string): void {
    this.byPool.delete(poolKey);
  }

  private expect(poolKey: string, member: string, kind: Expectation["kind"]): void {
    let expected = this.byPool.get(poolKey);
    if (!expected) {
      expected = new Map();
      this.byPool.set(poolKey, expected);
    }
    expected.set(member, { kind, expiresAt: this.clock.now() + this.ttlMs });
  }
}
