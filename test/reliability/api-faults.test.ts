// API faults: the operator process reaches kube-apiserver through a proxy that answers 409
// Conflict to PATCH/PUT of cocoonsets and pods, 429 with Retry-After, cuts watch streams and answers
// 410 Gone to watch resumes, at seeded random rates, while suspend/unsuspend, release + wake, migration
// and teardown cycles (and the other chaos drivers, warm-pool claims among them) run. Every invariant
// holds, the operator never exits, and every set converges.
// Replay a failure with CHAOS_SEED=<printed seed>.

import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { it } from "node:test";
import { testEnv } from "../env/testenv.ts";
import { runChaos } from "./chaos.ts";

const seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : randomInt(2 ** 31);

it("converges through 409s, 429s, dropped watches and 410 resumes", { timeout: 240_000 }, async () => {
  process.stderr.write(`api-faults.test: CHAOS_SEED=${seed}\n`);
  const result = await runChaos({
    env: testEnv(),
    kills: 0,
    durationMs: 35_000,
    seed,
    apiFaults: { conflict: 0.15, throttle: 0.08, dropWatch: 0.6, goneOnResume: 0.4 },
    log: (line) => process.stderr.write(`${line}\n`),
  });
  const c = result.apiCounts;
  process.stderr.write(
    `api-faults.test: seed=${seed} requests=${c.requests} conflicts=${c.conflicts} throttles=${c.throttles} ` +
      `droppedWatches=${c.droppedWatches} gones=${c.gones} cycles=${JSON.stringify(result.cycles)}\n`,
  );
  assert.deepEqual(result.checker.violations, [], `CHAOS_SEED=${seed}`);
  assert.equal(result.unexpectedExits, 0, "the operator never exited on its own");
  assert.equal(c.refusedOutOfScope, 0, "the operator stayed in its namespace");
  // Every kind of fault was actually injected.
  assert.ok(c.conflicts > 0 && c.throttles > 0 && c.droppedWatches > 0 && c.gones > 0, JSON.stringify(c));
});
