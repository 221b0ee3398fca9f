// The operator process: flags and environment → one manager running the CocoonSet and
// CocoonHibernation controllers, with metrics, health probes and leader election; a clean shutdown
// on SIGTERM or SIGINT (stop taking work, let in-flight reconciles finish, release the lease, exit 0).

import { readFileSync } from "node:fs";
import packageJson from "../package.json" with { type: "json" };
import {
  type Config,
  ConfigError,
  type Env,
  IN_CLUSTER_NAMESPACE_FILE,
  leaderElectionNamespace,
  loadConfig,
} from "./config.ts";
import type { KubeClientConfig } from "./controller/client.ts";
import { loadRestConfig } from "./controller/kubeconfig.ts";
import { log } from "./log.ts";
import { createOperator, type Operator } from "./operator.ts";

/**
 * In-flight reconciles get this long after a signal; releasing the lease (at most the 10 s renew
 * deadline) follows, and both fit in Kubernetes' default 30 s termination grace period.
 */
const SHUTDOWN_DEADLINE_MS = 15_000;

/** controller-runtime's order: --kubeconfig, KUBECONFIG, the in-cluster service account, then ~/.kube/config. */
function loadKubeConfig(config: Config, env: Env): KubeClientConfig {
  const kubeConfig = loadRestConfig({ explicitPath: config.kubeconfig || undefined, env });
  if (!kubeConfig) {
    throw new ConfigError(
      "no Kubernetes configuration: not running in a pod, and neither --kubeconfig, KUBECONFIG nor ~/.kube/config is set",
      1,
    );
  }
  return { kubeConfig };
}

function inClusterNamespace(): string | undefined {
  try {
    return readFileSync(IN_CLUSTER_NAMESPACE_FILE, "utf8");
  } catch {
    return undefined;
  }
}

function build(env: Env): { operator: Operator; config: Config } {
  const { config, warnings } = loadConfig(process.argv.slice(2), env);
  log.level = config.logLevel;
  for (const warning of warnings) log.warn(warning);
  const operator = createOperator({
    kubeConfig: loadKubeConfig(config, env),
    registryBase: config.registryBase,
    metricsAddr: config.metricsAddr,
    ...(config.metricsSecure ? { metricsSecure: config.metricsCert ?? "self-signed" } : {}),
    probeAddr: config.probeAddr,
    leaderElect: config.leaderElect,
    leaderElectionNamespace: config.leaderElect ? leaderElectionNamespace(inClusterNamespace(), env) : "",
    cocoonSetConcurrency: config.cocoonSetConcurrency,
    hibernationConcurrency: config.hibernationConcurrency,
    copyChunkBytes: config.copyChunkBytes,
    copyConcurrency: config.copyConcurrency,
    restoreConcurrency: config.restoreConcurrency,
    guestHooks: config.guestHooks,
  });
  return { operator, config };
}

/** Stops on the first SIGTERM or SIGINT; a second one exits at once, as controller-runtime does. */
function stopOnSignals(operator: Operator): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      log.warn({ signal }, "second signal, exiting without waiting");
      process.exit(1);
    }
    stopping = true;
    log.info({ signal, deadlineMs: SHUTDOWN_DEADLINE_MS }, "shutting down");
    operator.stop(SHUTDOWN_DEADLINE_MS).then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}

async function main(): Promise<void> {
  let built: { operator: Operator; config: Config };
  try {
    built = build(process.env);
  } catch (err) {
    if (err instanceof ConfigError && err.plain) {
      // Command-line errors, --help and a bad log level print plain text, as the Go binary does.
      process.stderr.write(err.message.endsWith("\n") ? err.message : `${err.message}\n`);
    } else {
      log.fatal({ err: err instanceof ConfigError ? undefined : err }, (err as Error).message);
    }
    process.exit(err instanceof ConfigError ? err.exitCode : 1);
  }
  const { operator, config } = built;
  stopOnSignals(operator);
  log.info(
    {
      metrics: config.metricsAddr,
      probe: config.probeAddr,
      leaderElect: config.leaderElect,
      cocoonSetConcurrency: config.cocoonSetConcurrency,
      hibernationConcurrency: config.hibernationConcurrency,
      registry: config.registryBase,
      version: packageJson.version,
    },
    "starting cocoon-operator",
  );
  try {
    await operator.start();
  } catch (err) {
    log.fatal({ err }, "starting the manager failed");
    await operator.stop(0).catch(() => {});
    process.exit(1);
  }
}

await main();
