// Random kills (issue 12): at least 50 SIGKILLs of the operator process at random moments while
// suspend/unsuspend, release + wake, migration and teardown cycles run on the simulator; the invariant
// checker fails on the first violation with the history that led to it; then every set converges.
// Replay a failure with CHAOS_SEED=<printed seed>.

import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { it } from "node:test";
import { testEnv } from "../env/testenv.ts";
import { runChaos } from "./chaos.ts";

const seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : randomInt(2 ** 31);

it("keeps every invariant across 50 random operator kills, then converges", {
  timeout: 300_000,
}, async () => {
  process.stderr.write(`kills.test: CHAOS_SEED=${seed}\n`);
  const result = await runChaos({
    env: testEnv(),
    kills: 50,
    seed,
    minUpMs: 300,
    maxUpMs: 2200,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stderr.write(
    `kills.test: seed=${seed} kills=${result.kills} cycles=${JSON.stringify(result.cycles)} ` +
      `vmEvents=${result.checker.counts.vmEvents} tagDeletes=${result.checker.counts.tagDeletes} ` +
      `liveDestroys=${result.checker.counts.liveDestroys}\n`,
  );
  assert.deepEqual(result.checker.violations, [], `CHAOS_SEED=${seed}`);
  assert.ok(result.kills >= 50);
  assert.equal(result.unexpectedExits, 0, "the operator never exited on its own");
  const cycles = Object.values(result.cycles).reduce((a, b) => a + b, 0);
  assert.ok(cycles > 0, "the drivers completed cycles");
});
