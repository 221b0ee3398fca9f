// Chaos across features: one seeded schedule interleaves checkpoint, restore, branch, claim,
// release, pool scale and roll, set delete, keep-checkpoints prune and checkpoint delete on the same
// few sets (a Suspended warm pool, plain sets, their branches and checkpoints), with operator
// SIGKILLs, API faults (lost answers to applied set writes among them) and registry outages
// (featurechaos.ts). No tag a live checkpoint or an unwoken VM needs is removed (f, and the VM
// timeline's b and e); no manifest DELETE leaves a set's own VMs (g); a claim is bound to at most
// one set, ever (h); every object that has not converged once the chaos stops says why (i); guest
// hooks (a policy the pool's members and some plain sets name) act throughout: a claim is Ready only
// after its PostClaim hooks succeeded on its set's VMs (k), and a Running set naming the policy runs
// each VM's post hooks first (l). Every violation seen is reported, each with its history, with the
// command that replays the schedule (CHAOS_SEED=<seed> ...); CHAOS_TIMELINE=1 prints the run's whole
// timeline.

import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { it } from "node:test";
import { testEnv } from "../env/testenv.ts";
import { runFeatureChaos } from "./featurechaos.ts";

const seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : randomInt(2 ** 31);
/** How long the schedule acts; CHAOS_MS=<ms> runs it longer by hand (the test's timeout grows with it). */
const chaosMs = process.env.CHAOS_MS ? Number(process.env.CHAOS_MS) : 50_000;
const replay = `CHAOS_SEED=${seed}${process.env.CHAOS_MS ? ` CHAOS_MS=${chaosMs}` : ""} npx node test/run.ts test/reliability/features-chaos.test.ts`;

it("keeps every invariant while the features act on the same sets through kills and faults", {
  timeout: 190_000 + chaosMs,
}, async () => {
  process.stderr.write(`features-chaos.test: CHAOS_SEED=${seed}\n`);
  try {
    const result = await runFeatureChaos({
      env: testEnv(),
      seed,
      chaosMs,
      convergeMs: 50_000,
      log: (line) => process.stderr.write(`${line}\n`),
    });
    const c = result.apiCounts;
    process.stderr.write(
      `features-chaos.test: seed=${seed} actions=${JSON.stringify(result.actions)} ` +
        `outcomes=${JSON.stringify(result.outcomes)} guestExecs=${JSON.stringify(result.guestExecs)} ` +
        `kills=${result.kills} ` +
        `registryFaults=${result.registryFaults} conflicts=${c.conflicts} throttles=${c.throttles} ` +
        `droppedWatches=${c.droppedWatches} gones=${c.gones} lostReplies=${c.lostReplies} ` +
        `counts=${JSON.stringify({ ...result.checker.counts, ...result.features.counts })} ` +
        `converged=${result.convergedAfterMs === undefined ? "no" : `${result.convergedAfterMs} ms`}\n` +
        result.leftUnconverged.map((line) => `  not converged: ${line}\n`).join(""),
    );
    if (process.env.CHAOS_TIMELINE) process.stderr.write(`${result.checker.history(undefined, 100_000)}\n`);
    const violations = result.checker.violations;
    // Each violation's first line, then the histories of the first few (each can be long).
    assert.equal(
      violations.length,
      0,
      `${replay}\n${violations.length} violations:\n${violations.map((v) => `  - ${v.split("\n")[0]}`).join("\n")}\n\n` +
        violations.slice(0, 5).join("\n\n"),
    );
    assert.equal(result.unexpectedExits, 0, "the operator never exited on its own");
    assert.equal(c.refusedOutOfScope, 0, "the operator stayed in its namespace");
    for (const kind of ["checkpoint", "restore", "branch", "claim", "release", "roll", "scale"]) {
      assert.ok((result.actions[kind] ?? 0) > 0, `the schedule took no ${kind} action`);
    }
  } catch (err) {
    process.stderr.write(`features-chaos.test FAILED; replay its random schedule with:\n  ${replay}\n`);
    throw err;
  }
});
