#!/usr/bin/env node
// @ts-check
// An eval fan-out with @cocoonstack/sdk: claim N agent groups from a Running warm pool at once, hand
// each an eval case, run it in the group's guest, score the answers, and release every group.
//
//   node eval-fanout.mjs --pool POOL [--namespace NS] [--count 3] [--timeout-seconds 120]
//
// POOL and NS may come from COCOON_POOL and COCOON_NAMESPACE instead; the cluster is the one kubectl
// would use (KUBECONFIG, ~/.kube/config, in-cluster). Ctrl-C aborts the waits in progress and still
// releases what was claimed. Prints a line per case and a summary; exits 1 when a claim, an exec or a
// case fails, 2 on a usage error.

import { parseArgs } from "node:util";
import { CocoonClient, CocoonError } from "@cocoonstack/sdk";

/** @typedef {import("@cocoonstack/sdk").AgentGroup} AgentGroup */

/**
 * One eval case in its group: the case goes in as a file, the "model" (here `cat`, a real harness
 * runs its agent) answers on stdout, and the answer is scored against the expected one.
 * @param {AgentGroup} group
 * @param {number} index
 * @param {AbortSignal} signal
 */
async function runCase(group, index, signal) {
  const input = { case: index, prompt: `add ${index} and ${index}`, expected: 2 * index };
  await group.writeFile("main", "/tmp/case.json", JSON.stringify(input), { signal });
  const started = Date.now();
  const run = await group.exec("main", ["sh", "-c", "cat /tmp/case.json"], { timeoutMs: 30_000, signal });
  const ms = Date.now() - started;
  const passed = run.exitCode === 0 && JSON.parse(run.stdout).expected === input.expected;
  console.log(
    `case ${index} on ${group.name}: ${passed ? "passed" : `failed (exit ${run.exitCode}: ${(run.stderr || run.stdout).trim()})`} in ${ms} ms`,
  );
  return passed;
}

async function main() {
  const { values } = parseArgs({
    options: {
      namespace: { type: "string", short: "n" },
      pool: { type: "string" },
      count: { type: "string", default: "3" },
      "timeout-seconds": { type: "string", default: "120" },
    },
  });
  const pool = values.pool ?? process.env.COCOON_POOL;
  const namespace = values.namespace ?? process.env.COCOON_NAMESPACE;
  const count = Number(values.count);
  const timeoutMs = Number(values["timeout-seconds"]) * 1000;
  if (!pool || !Number.isInteger(count) || count < 1 || !(timeoutMs > 0)) {
    console.error("usage: eval-fanout.mjs --pool POOL [--namespace NS] [--count N] [--timeout-seconds S]");
    return 2;
  }
  const aborter = new AbortController();
  process.once("SIGINT", () => aborter.abort(new Error("interrupted")));
  const { signal } = aborter;
  const started = Date.now();

  const client = await CocoonClient.connect(namespace ? { namespace } : {});
  const claims = await Promise.allSettled(
    Array.from({ length: count }, () => client.claim(pool, { timeoutMs, signal })),
  );
  /** @type {AgentGroup[]} */
  const groups = claims.flatMap((c) => (c.status === "fulfilled" ? [c.value] : []));
  let passed = 0;
  let releaseFailures = 0;
  try {
    const refused = claims.find((c) => c.status === "rejected");
    if (refused) throw refused.reason;
    const claimedMs = Date.now() - started;
    console.log(`claimed ${groups.length} groups from ${client.namespace}/${pool} in ${claimedMs} ms`);
    const outcomes = await Promise.all(groups.map((g, i) => runCase(g, i, signal)));
    passed = outcomes.filter(Boolean).length;
  } finally {
    // Released whatever happened above, without the signal: an interrupted run still gives back its groups.
    const released = await Promise.allSettled(groups.map((g) => g.release({ timeoutMs })));
    for (const r of released) {
      if (r.status === "rejected") {
        console.error(`release failed: ${describe(r.reason)}`);
        releaseFailures++;
      }
    }
  }
  if (releaseFailures > 0) return 1;
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`eval-fanout: ${passed}/${count} cases passed on ${count} groups, released in ${seconds} s`);
  return passed === count ? 0 : 1;
}

/** @param {unknown} err */
function describe(err) {
  if (err instanceof CocoonError) return `${err.name} (${err.reason}): ${err.message}`;
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

try {
  process.exitCode = await main();
} catch (err) {
  console.error(`eval-fanout failed: ${describe(err)}`);
  process.exitCode = 1;
}
