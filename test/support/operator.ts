// Runs the operator in-process against the integration test environment, watching one namespace so
// test files sharing the API server never reconcile each other's objects.

import type { Clock } from "../../src/clock.ts";
import { type KubeClient, kubeConfigFromFile } from "../../src/controller/client.ts";
import { createOperator, type Operator, type OperatorConfig } from "../../src/operator.ts";
import type { SnapshotRegistry } from "../../src/registry/index.ts";
import { testEnv } from "../env/testenv.ts";

export interface TestOperatorOptions {
  /** The API server to talk to (e.g. a fault proxy's); default the test environment's. */
  kubeconfigPath?: string;
  /** The one namespace the operator watches; default every namespace. */
  namespace?: string;
  /** OCI_REGISTRY; default the test environment's registry. */
  registryBase?: string;
  /** Replaces the registry client (e.g. a FakeSnapshotRegistry or a counting wrapper). */
  registry?: SnapshotRegistry;
  cocoonSetConcurrency?: number;
  hibernationConcurrency?: number;
  clock?: Clock;
  /** How often an absent CocoonCheckpoint API is probed again; default the operator's 60 s. */
  checkpointReprobeMs?: number;
  /** CocoonClaim workers; default the operator's 64. */
  claimConcurrency?: number;
  /** false: guest hooks off, as --guest-hooks=false; default on. */
  guestHooks?: boolean;
  /** Where /metrics listens ("127.0.0.1:0" picks a port: operator.manager.ports()); default none. */
  metricsAddr?: string;
  /** Lead through a Lease in this namespace before reconciling; default no leader election. */
  leaderElectionNamespace?: string;
  /** HTTPS /metrics for authorized callers only. */
  metricsSecure?: OperatorConfig["metricsSecure"];
}

export interface TestOperator {
  readonly operator: Operator;
  /** The operator's own API client: requestCounts() shows every call it made. */
  readonly client: KubeClient;
  stop(): Promise<void>;
}

/** Starts the operator (no probe server; metrics and leader election only if asked) and waits for its caches. */
export async function startTestOperator(opts: TestOperatorOptions = {}): Promise<TestOperator> {
  const env = testEnv();
  const operator = createOperator({
    kubeConfig: kubeConfigFromFile(opts.kubeconfigPath ?? env.kubeconfigPath),
    registryBase: opts.registryBase ?? env.registry,
    ...(opts.registry ? { registry: opts.registry } : {}),
    metricsAddr: opts.metricsAddr ?? "0",
    ...(opts.metricsSecure ? { metricsSecure: opts.metricsSecure } : {}),
    probeAddr: "0",
    leaderElect: opts.leaderElectionNamespace !== undefined,
    leaderElectionNamespace: opts.leaderElectionNamespace ?? "",
    cocoonSetConcurrency: opts.cocoonSetConcurrency ?? 4,
    hibernationConcurrency: opts.hibernationConcurrency ?? 4,
    ...(opts.namespace ? { watchNamespace: opts.namespace } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.checkpointReprobeMs ? { checkpointReprobeMs: opts.checkpointReprobeMs } : {}),
    ...(opts.claimConcurrency ? { claimConcurrency: opts.claimConcurrency } : {}),
    ...(opts.guestHooks === undefined ? {} : { guestHooks: opts.guestHooks }),
  });
  await operator.start();
  const { cocoonSets, pods, hibernations } = operator.informers;
  await Promise.all([cocoonSets.waitForSync(), pods.waitForSync(), hibernations.waitForSync()]);
  if (operator.checkpoints.isAvailable) await operator.checkpoints.informer.waitForSync();
  if (operator.pools.isAvailable)
    await Promise.all([operator.pools.pools.waitForSync(), operator.pools.claims.waitForSync()]);
  return {
    operator,
    client: operator.client,
    stop: () => operator.stop(5_000),
  };
}
