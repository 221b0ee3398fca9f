// Random kills: at least 50 SIGKILLs of the operator process at random moments while
// suspend/unsuspend (with a toolbox), release + wake, migration, teardown, CocoonHibernation
// hibernate/wake (with a flip mid-transition), image-change, warm-pool claim/release (never a set
// bound to two claims), checkpoint/branch/restore cycles (no tag a live checkpoint or an owed restore
// needs is ever deleted) and guest hooks (a set refreshed and quiesced through every cycle, and one
// whose post hooks always fail, never reported Ready) run on the simulator; the
// invariant checker fails on the first violation with the history that led to it; then every set
// converges. Each driver must finish its minimum of cycles. A failure prints the command that replays
// its random schedule (CHAOS_SEED=<seed> ...).

import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { it } from "node:test";
import { testEnv } from "../env/testenv.ts";
import { CHAOS_DRIVERS, type ChaosDriver, runChaos } from "./chaos.ts";

const seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : randomInt(2 ** 31);
const replay = `CHAOS_SEED=${seed} npx node test/run.ts test/reliability/kills.test.ts`;
const MIN_CYCLES: Record<ChaosDriver, number> = {
  retain: 2,
  release: 2,
  migrate: 2,
  teardown: 2,
  hibernation: 2,
  image: 2,
  pool: 2,
  checkpoint: 2,
  guest: 2,
};

it("keeps every invariant across 50 random operator kills, then converges", {
  timeout: 360_000,
}, async () => {
  process.stderr.write(`kills.test: CHAOS_SEED=${seed}\n`);
  try {
    const result = await runChaos({
      env: testEnv(),
      kills: 50,
      seed,
      minUpMs: 300,
      maxUpMs: 2200,
      minCycles: MIN_CYCLES,
      log: (line) => process.stderr.write(`${line}\n`),
    });
    process.stderr.write(
      `kills.test: seed=${seed} kills=${result.kills} cycles=${JSON.stringify(result.cycles)} ` +
        `hibernationFlips=${result.hibernationFlips} vmEvents=${result.checker.counts.vmEvents} ` +
        `tagDeletes=${result.checker.counts.tagDeletes} checkpointTagDeletes=${result.checker.counts.checkpointTagDeletes} ` +
        `hibernateCopies=${result.checker.counts.hibernateCopies} liveDestroys=${result.checker.counts.liveDestroys}\n`,
    );
    assert.deepEqual(result.checker.violations, [], replay);
    assert.ok(result.kills >= 50);
    assert.equal(result.unexpectedExits, 0, "the operator never exited on its own");
    for (const driver of CHAOS_DRIVERS) {
      assert.ok(
        result.cycles[driver] >= MIN_CYCLES[driver],
        `driver ${driver} finished ${result.cycles[driver]} cycles, fewer than ${MIN_CYCLES[driver]}`,
      );
    }
    assert.ok(result.hibernationFlips >= 1, "a CocoonHibernation flipped mid-transition");
  } catch (err) {
    process.stderr.write(`kills.test FAILED; replay its random schedule with:\n  ${replay}\n`);
    throw err;
  }
});
