#!/usr/bin/env node
// @ts-check
// One round of an RL rollout loop with @cocoonstack/sdk: claim an agent group from a Suspended warm
// pool (the claim wakes a hibernated member), give it a task, checkpoint it, branch N groups from the
// checkpoint, run an episode in each (a shell line that writes a result file), read every result,
// roll the original back to the checkpoint after it moved on, and release every group.
//
//   node rl-rollout.mjs --pool POOL [--namespace NS] [--branches 4] [--timeout-seconds 300]
//
// POOL and NS may come from COCOON_POOL and COCOON_NAMESPACE instead; the cluster is the one kubectl
// would use (KUBECONFIG, ~/.kube/config, in-cluster). Ctrl-C aborts the wait in progress and still
// releases what was claimed. The checkpoint stays: `kubectl delete cocooncheckpoint NAME` removes it.
// Prints a line per step and a summary; exits 1 on failure, 2 on a usage error.

import { parseArgs } from "node:util";
import { CocoonClient, CocoonError } from "@cocoonstack/sdk";

/** @typedef {import("@cocoonstack/sdk").AgentGroup} AgentGroup */

const TASK = { task: "reach-goal", seed: 7 };
const STEPS = 3;

/**
 * The episode a branch runs in its guest: it reads the task the checkpoint holds, takes its steps
 * (each appended to a log) and writes its result file. A real rollout runs the policy here.
 * @param {number} episode
 */
function episodeLine(episode) {
  const steps = Array.from({ length: STEPS }, (_, i) => `echo step ${i + 1} >> /tmp/episode.log`);
  const result = JSON.stringify({ episode, steps: STEPS, reward: (episode + 1) / 4 });
  return ["cat /tmp/task.json", ...steps, `echo '${result}' > /tmp/result.json`].join(" && ");
}

const decoder = new TextDecoder();

/**
 * @param {AgentGroup} fork
 * @param {number} episode
 * @param {AbortSignal} signal
 * @returns {Promise<{ episode: number; steps: number; reward: number }>}
 */
async function runEpisode(fork, episode, signal) {
  const run = await fork.exec("main", ["sh", "-c", episodeLine(episode)], { timeoutMs: 60_000, signal });
  if (run.exitCode !== 0) {
    throw new Error(
      `episode ${episode} on ${fork.name} exited ${run.exitCode}: ${(run.stderr || run.stdout).trim()}`,
    );
  }
  const seen = JSON.parse(run.stdout);
  if (seen.task !== TASK.task)
    throw new Error(`${fork.name} did not start from the checkpoint: ${run.stdout}`);
  const result = JSON.parse(decoder.decode(await fork.readFile("main", "/tmp/result.json", { signal })));
  console.log(`episode ${episode} on ${fork.name}: ${result.steps} steps, reward ${result.reward}`);
  return result;
}

async function main() {
  const { values } = parseArgs({
    options: {
      namespace: { type: "string", short: "n" },
      pool: { type: "string" },
      branches: { type: "string", default: "4" },
      "timeout-seconds": { type: "string", default: "300" },
    },
  });
  const pool = values.pool ?? process.env.COCOON_POOL;
  const namespace = values.namespace ?? process.env.COCOON_NAMESPACE;
  const branches = Number(values.branches);
  const timeoutMs = Number(values["timeout-seconds"]) * 1000;
  if (!pool || !Number.isInteger(branches) || branches < 1 || !(timeoutMs > 0)) {
    console.error("usage: rl-rollout.mjs --pool POOL [--namespace NS] [--branches N] [--timeout-seconds S]");
    return 2;
  }
  const aborter = new AbortController();
  process.once("SIGINT", () => aborter.abort(new Error("interrupted")));
  const { signal } = aborter;
  const started = Date.now();

  const client = await CocoonClient.connect(namespace ? { namespace } : {});
  const group = await client.claim(pool, { timeoutMs, signal });
  console.log(
    `claimed ${group.name} from ${client.namespace}/${pool}: ${group.members.map((m) => m.name).join(", ")}`,
  );
  /** @type {AgentGroup[]} */
  const forks = [];
  let releaseFailures = 0;
  let episodes = 0;
  let reward = 0;
  try {
    await group.writeFile("main", "/tmp/task.json", JSON.stringify(TASK), { signal });
    const checkpoint = `${group.name}-start`;
    await group.checkpoint(checkpoint, { timeoutMs, signal });
    console.log(`checkpoint ${checkpoint} Ready`);

    forks.push(...(await client.branch(checkpoint, { count: branches, timeoutMs, signal })));
    console.log(`branched ${forks.length}: ${forks.map((f) => f.name).join(", ")}`);
    const results = await Promise.all(forks.map((fork, i) => runEpisode(fork, i, signal)));

    // The original moves on (here: its task is overwritten), then rolls back to the checkpoint.
    await group.writeFile("main", "/tmp/task.json", JSON.stringify({ task: "moved-on" }), { signal });
    await group.restore(checkpoint, { timeoutMs, signal });
    const task = JSON.parse(decoder.decode(await group.readFile("main", "/tmp/task.json", { signal })));
    if (task.task !== TASK.task)
      throw new Error(`restore did not bring the task back: ${JSON.stringify(task)}`);
    console.log(`restored ${group.name} to ${checkpoint}`);

    episodes = results.length;
    reward = results.reduce((sum, r) => sum + r.reward, 0);
  } finally {
    // Released whatever happened above, without the signal: an interrupted run still gives back its groups.
    const released = await Promise.allSettled([...forks, group].map((g) => g.release({ timeoutMs })));
    for (const r of released) {
      if (r.status === "rejected") {
        console.error(`release failed: ${describe(r.reason)}`);
        releaseFailures++;
      }
    }
  }
  if (releaseFailures > 0) return 1;
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `rl-rollout: ${episodes} episodes, total reward ${reward.toFixed(2)}, rolled back and released in ${seconds} s`,
  );
  return 0;
}

/** @param {unknown} err */
function describe(err) {
  if (err instanceof CocoonError) return `${err.name} (${err.reason}): ${err.message}`;
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

try {
  process.exitCode = await main();
} catch (err) {
  console.error(`rl-rollout failed: ${describe(err)}`);
  process.exitCode = 1;
}
