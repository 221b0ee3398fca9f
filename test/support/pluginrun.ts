// Runs kubectl cocoon in-process against the integration environment, as the kubectl-cocoon
// executable runs it, and checks its exit status with its output in the failure message.

import assert from "node:assert/strict";
import { systemClock } from "../../src/clock.ts";
import { runPlugin } from "../../src/plugin/cli.ts";
import { testEnv } from "../env/testenv.ts";

export interface PluginRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The plugin in namespace `ns` with the environment's kubeconfig and registry (or `pluginEnv`). */
export async function runCocoon(
  ns: string,
  argv: readonly string[],
  pluginEnv: Record<string, string> = pluginBaseEnv(),
): Promise<PluginRun> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await runPlugin(["-n", ns, ...argv], {
    stdout: (text) => stdout.push(text),
    stderr: (text) => stderr.push(text),
    env: pluginEnv,
    now: () => Date.now(),
    sleep: systemClock.sleep,
  });
  return { code, stdout: stdout.join(""), stderr: stderr.join("") };
}

export function pluginBaseEnv(): Record<string, string> {
  const env = testEnv();
  return { KUBECONFIG: env.kubeconfigPath, OCI_REGISTRY: env.registry };
}

export function expectCode(run: PluginRun, code: number): void {
  assert.equal(run.code, code, `exit ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
}
