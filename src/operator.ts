// The operator process minus its command line: API client, shared informers, event recorder,
// registry client, the manager (metrics, probes, optional leader election) and the controllers.
// main.ts builds the config from flags and environment; tests and benchmarks call this directly.

import { readFileSync } from "node:fs";
import type { Pod } from "./apis/core.ts";
import { CheckpointCatalog } from "./checkpoint/catalog.ts";
import { asCheckpointRegistry, setsBranchingFrom, setupCheckpointController } from "./checkpoint/setup.ts";
import type { Clock } from "./clock.ts";
import { systemClock } from "./clock.ts";
import { setupCocoonSetController, watchActivity } from "./cocoonset/setup.ts";
import { KIND_COCOONSET } from "./contract/keys.ts";
import { controllerOf } from "./contract/pod.ts";
import { KubeClient, type KubeClientConfig } from "./controller/client.ts";
import { KubeEventRecorder } from "./controller/events.ts";
import { KubeExecutor, type PodExecutor } from "./controller/exec.ts";
import { DEFAULT_LEASE_NAME, LeaderElector } from "./controller/leaderelection.ts";
import { Manager } from "./controller/manager.ts";
import { recordRestRequest, type SecureMetrics } from "./controller/metrics.ts";
import { RequestReviewer, withAuthenticationAndAuthorization } from "./controller/metricsauth.ts";
import {
  COCOONCHECKPOINTS,
  COCOONCLAIMS,
  COCOONGUESTPOLICIES,
  COCOONPOOLS,
  COCOONRESTORES,
  type ResourceType,
} from "./controller/resources.ts";
import { selfSignedCertificate } from "./controller/selfsigned.ts";
import { KIND_REPROBE_MS, kindsServed, whenKindsServed } from "./controller/served.ts";
import { GuestPolicyCatalog } from "./guest/catalog.ts";
import { GuestHooksGate } from "./guest/gate.ts";
import { PreHibernateRequests } from "./guest/requests.ts";
import { setupGuestController } from "./guest/setup.ts";
import type { HibernateVerdict } from "./guestgate.ts";
import { setupHibernationController } from "./hibernation/setup.ts";
import { ActivityLeases, mayListActivityLeases } from "./idle/activity.ts";
import { createOperatorInformers, type OperatorInformers } from "./informers/informers.ts";
import { log } from "./log.ts";
// Registers the cocoon_operator_* collectors, so /metrics lists them before their first sample.
import { observeSetPhases, snapshotDeletesTotal } from "./metrics/cocoon.ts";
import { setVMNames } from "./pass/setvms.ts";
import { SuspendConfirmations } from "./pass/suspendconfirmations.ts";
import { PoolCatalog } from "./pool/catalog.ts";
import { setupPoolControllers } from "./pool/setup.ts";
import { RestoreCatalog } from "./restore/catalog.ts";
import { setupRestoreController } from "./restore/setup.ts";
import "./metrics/checkpoint.ts";
import "./metrics/pool.ts";
import { type CheckpointRegistry, createRegistryClient, type SnapshotRegistry } from "./registry/index.ts";

export interface OperatorConfig {
  kubeConfig: KubeClientConfig;
  /** OCI_REGISTRY: the repository base snapshots live under. */
  registryBase: string;
  /** Replaces the client built from registryBase (tests, benchmarks). */
  registry?: SnapshotRegistry;
  /** ":8080" form; "0" disables. */
  metricsAddr: string;
  /** HTTPS /metrics for callers the API server authorizes; its certificate from files or self-signed. */
  metricsSecure?: { certFile: string; keyFile: string } | "self-signed";
  /** ":8081" form; "0" disables. */
  probeAddr: string;
  leaderElect: boolean;
  leaderElectionNamespace: string;
  cocoonSetConcurrency: number;
  hibernationConcurrency: number;
  /** Bytes per PATCH of a streamed blob copy, 0 = one PUT per blob; default the registry client's. */
  copyChunkBytes?: number;
  /** A branch's VM copies in flight at once; default 4. */
  copyConcurrency?: number;
  /** Watch one namespace only (tests sharing an API server); default every namespace. */
  watchNamespace?: string;
  clock?: Clock;
  /** How often to look again for an absent CocoonCheckpoint API; default 60 s (tests shorten it). */
  checkpointReprobeMs?: number;
  /** How often to look again for absent CocoonPool and CocoonClaim APIs; default 60 s. */
  poolReprobeMs?: number;
  /** CocoonClaim workers (claims bind in parallel); default 64. */
  claimConcurrency?: number;
  /** CocoonRestore workers (each copies one restore's snapshots); default 4. */
  restoreConcurrency?: number;
  /** false turns guest hooks off: every guest-policy annotation is ignored (docs/guest.md). Default on. */
  guestHooks?: boolean;
  /** Pods whose guest hooks run at once; default 16. */
  guestConcurrency?: number;
  /** Runs guest hooks; default the API server's pod exec. */
  executor?: PodExecutor;
}

/** A feature of v1alpha1 kinds that a cluster may not serve (src/controller/served.ts). */
interface OptionalFeature {
  name: string;
  kinds: ResourceType[];
  reprobeMs: number | undefined;
  beforeLateEnable?: (signal: AbortSignal) => Promise<void>;
  enable: () => void;
}

export interface Operator {
  readonly manager: Manager;
  readonly client: KubeClient;
  readonly informers: OperatorInformers;
  readonly registry: SnapshotRegistry | undefined;
  /** CocoonCheckpoints; its lookups answer "unavailable" until a probe found the kind served. */
  readonly checkpoints: CheckpointCatalog;
  /** CocoonPools and CocoonClaims, and the member sets they read (docs/pools.md). */
  readonly pools: PoolCatalog;
  /** The suspends the CocoonSet controller's gate confirmed (a second reconciler may share them). */
  readonly suspendConfirmations: SuspendConfirmations;
  /** Guest hooks' shared parts (docs/guest.md); undefined when they are off. */
  readonly guest: GuestHooks | undefined;
  /** Resolves once servers listen and informers run; controllers start when caches sync (and lead). */
  start(signal?: AbortSignal): Promise<void>;
  /** Graceful: in-flight reconciles get up to deadlineMs, then everything stops. */
  stop(deadlineMs: number): Promise<void>;
}

/** The secure metrics server's certificate (read once, at start) and its API-server guard. */
function secureMetrics(
  client: KubeClient,
  certificate: NonNullable<OperatorConfig["metricsSecure"]>,
  clock: Clock,
): SecureMetrics {
  const reviewer = new RequestReviewer(client, clock);
  return {
    certificate:
      certificate === "self-signed"
        ? selfSignedCertificate(["localhost", "127.0.0.1"], new Date(clock.now()))
        : {
            cert: readFileSync(certificate.certFile, "utf8"),
            key: readFileSync(certificate.keyFile, "utf8"),
          },
    guard: (handler) => withAuthenticationAndAuthorization(reviewer, handler),
  };
}

/** Guest hooks' parts the controllers share: the policies' cache, the gate, the pre-hibernate requests. */
export interface GuestHooks {
  catalog: GuestPolicyCatalog;
  requests: PreHibernateRequests;
  gate: GuestHooksGate;
}

function guestHooks(client: KubeClient, clock: Clock, namespace: string | undefined): GuestHooks {
  const catalog = new GuestPolicyCatalog(client, { clock, namespace });
  const requests = new PreHibernateRequests();
  const gate = new GuestHooksGate({ policy: (ns, name) => catalog.policy(ns, name), requests, clock });
  return { catalog, requests, gate };
}

/** The gate's verdict for a pod a CocoonHibernation would hibernate, through the set that controls it. */
function hibernateVerdict(informers: OperatorInformers, gate: GuestHooksGate, pod: Pod): HibernateVerdict {
  const owner = controllerOf(pod);
  const cs =
    owner?.kind === KIND_COCOONSET
      ? informers.cocoonSets.get(pod.metadata.namespace ?? "", owner.name)
      : undefined;
  return cs ? gate.beforeHibernate(cs, pod) : { action: "proceed" };
}

/** Builds the operator; setup errors (a concurrency below 1) throw here, before anything runs. */
export function createOperator(config: OperatorConfig): Operator {
  const clock = config.clock ?? systemClock;
  const client = new KubeClient({ ...config.kubeConfig, clock });
  client.onRequest((request) =>
    recordRestRequest({ verb: request.method, code: request.code, host: request.host }),
  );
  const informers = createOperatorInformers(client, {
    clock,
    namespace: config.watchNamespace,
    setVMNames,
  });
  observeSetPhases(() => informers.cocoonSets.list().map((cs) => cs.status?.phase ?? ""));
  const events = new KubeEventRecorder({ client, component: "cocoon-operator", clock });
  const registry =
    config.registry ??
    (config.registryBase
      ? createRegistryClient(config.registryBase, {
          logger: log,
          sleep: (ms, signal) => clock.sleep(ms, signal),
          ...(config.copyChunkBytes === undefined ? {} : { chunkSize: config.copyChunkBytes }),
          onDelete: (result) => snapshotDeletesTotal.inc({ result }),
        })
      : undefined);
  const manager = new Manager({
    metricsBindAddress: config.metricsAddr,
    ...(config.metricsSecure ? { secureMetrics: secureMetrics(client, config.metricsSecure, clock) } : {}),
    healthProbeBindAddress: config.probeAddr,
    leaderElectionId: DEFAULT_LEASE_NAME,
    ...(config.leaderElect
      ? {
          leaderElector: new LeaderElector({
            client,
            namespace: config.leaderElectionNamespace,
            name: DEFAULT_LEASE_NAME,
            releaseOnCancel: true,
            clock,
          }),
        }
      : {}),
  });

  const checkpoints = new CheckpointCatalog(client, { clock, namespace: config.watchNamespace });
  const pools = new PoolCatalog(client, informers.cocoonSets, { clock, namespace: config.watchNamespace });
  const checkpointRegistry = asCheckpointRegistry(registry);
  const restores = new RestoreCatalog(client, { clock, namespace: config.watchNamespace });
  const suspendConfirmations = new SuspendConfirmations();
  const activity = new ActivityLeases(client, { clock, namespace: config.watchNamespace });
  const guest = config.guestHooks === false ? undefined : guestHooks(client, clock, config.watchNamespace);
  const cocoonSetController = setupCocoonSetController(manager, {
    client,
    informers,
    registry,
    events,
    clock,
    suspendConfirmations,
    activity,
    ...(guest ? { guest: guest.gate } : {}),
    concurrency: config.cocoonSetConcurrency,
    ...(checkpointRegistry
      ? {
          branching: {
            checkpoints,
            registry: checkpointRegistry,
            ...(config.copyConcurrency === undefined ? {} : { copyConcurrency: config.copyConcurrency }),
          },
        }
      : {}),
  });
  if (!registry) throw new Error("OCI_REGISTRY must be set");
  setupHibernationController(manager, {
    client,
    informers,
    namespace: config.watchNamespace,
    registry,
    events,
    clock,
    concurrency: config.hibernationConcurrency,
    ...(guest ? { beforeHibernate: (pod: Pod) => hibernateVerdict(informers, guest.gate, pod) } : {}),
  });

  const enableCheckpoints = (registry: CheckpointRegistry): void => {
    checkpoints.markAvailable();
    setupCheckpointController(manager, {
      client,
      catalog: checkpoints,
      informers,
      registry,
      events,
      clock,
      log,
    });
    cocoonSetController.watches(checkpoints.informer, (ck) => setsBranchingFrom(informers, ck));
  };

  /** Ends the re-probe of absent optional kinds. */
  const stopping = new AbortController();

  /**
   * Starts a feature whose v1alpha1 kinds a cluster may not serve: one set up for the Go operator has
   * no such CRDs, and their informers would never sync. That is logged, not fatal, and the operator
   * looks again on a slow schedule until the CRDs and their RBAC are applied; then `beforeLateEnable`
   * runs first (say, to sync a cache the feature answers from at once).
   */
  const startOptional = async (feature: OptionalFeature, signal?: AbortSignal): Promise<void> => {
    const kinds = feature.kinds.map((rt) => rt.kind).join(" and ");
    if (await kindsServed(client, feature.kinds, config.watchNamespace, { clock, log, signal })) {
      feature.enable();
      return;
    }
    log.warn(
      `${kinds} (cocoonset.cocoonstack.io/v1alpha1) not served or not permitted; running without ${feature.name} until they are (apply config/crd and config/rbac to enable them)`,
    );
    const reprobe = signal ? AbortSignal.any([signal, stopping.signal]) : stopping.signal;
    const enableWhenServed = async () => {
      await whenKindsServed(client, feature.kinds, config.watchNamespace, {
        clock,
        log,
        signal: reprobe,
        intervalMs: feature.reprobeMs ?? KIND_REPROBE_MS,
      });
      await feature.beforeLateEnable?.(reprobe);
      feature.enable();
      log.info(`${kinds} (cocoonset.cocoonstack.io/v1alpha1) served now; ${feature.name} enabled`);
    };
    enableWhenServed().catch((err: unknown) => {
      if (!reprobe.aborted) log.error({ err }, `enabling ${feature.name} failed`);
    });
  };

  const startActivity = async (): Promise<void> => {
    if (await mayListActivityLeases(client, config.watchNamespace)) {
      watchActivity(manager, cocoonSetController, activity);
      return;
    }
    log.warn(
      "may not list Leases (coordination.k8s.io): idle sets are judged by their last-activity annotation only; apply config/rbac to read their activity Leases",
    );
  };

  const optionalFeatures: OptionalFeature[] = [
    {
      name: "pools",
      kinds: [COCOONPOOLS, COCOONCLAIMS],
      reprobeMs: config.poolReprobeMs,
      enable: () => {
        setupPoolControllers(manager, {
          client,
          catalog: pools,
          informers,
          events,
          clock,
          log,
          ...(config.claimConcurrency ? { claimConcurrency: config.claimConcurrency } : {}),
          ...(guest ? { guest: guest.gate } : {}),
        });
      },
    },
  ];
  if (guest) {
    optionalFeatures.push({
      name: "guest hooks",
      kinds: [COCOONGUESTPOLICIES],
      reprobeMs: config.checkpointReprobeMs,
      // The policies' cache syncs first: until then a set naming one would read as naming none that exists.
      beforeLateEnable: async (signal) => {
        manager.addInformer(guest.catalog.informer);
        await guest.catalog.informer.waitForSync(signal);
      },
      enable: () => {
        setupGuestController(manager, {
          client,
          catalog: guest.catalog,
          informers,
          executor: config.executor ?? new KubeExecutor(client, clock),
          gate: guest.gate,
          requests: guest.requests,
          events,
          clock,
          log,
          ...(config.guestConcurrency ? { concurrency: config.guestConcurrency } : {}),
          claimParameters: (namespace, claim) => pools.claim(namespace, claim)?.spec.parameters,
        });
      },
    });
  } else {
    log.info("guest hooks are off (--guest-hooks=false): guest-policy annotations are ignored");
  }
  if (checkpointRegistry) {
    optionalFeatures.push({
      name: "checkpoints",
      kinds: [COCOONCHECKPOINTS],
      reprobeMs: config.checkpointReprobeMs,
      // The informer runs and syncs first, so the catalog never answers from an empty cache.
      beforeLateEnable: async (signal) => {
        manager.addInformer(checkpoints.informer);
        await checkpoints.informer.waitForSync(signal);
      },
      enable: () => enableCheckpoints(checkpointRegistry),
    });
    // Restores read the checkpoints' cache: until it is enabled (the CocoonCheckpoint kind served),
    // a restore is refused as CheckpointsUnavailable.
    optionalFeatures.push({
      name: "restores",
      kinds: [COCOONRESTORES],
      reprobeMs: config.checkpointReprobeMs,
      enable: () => {
        setupRestoreController(manager, {
          client,
          ...(config.restoreConcurrency ? { concurrency: config.restoreConcurrency } : {}),
          catalog: restores,
          checkpoints,
          informers,
          registry: checkpointRegistry,
          events,
          clock,
          log,
        });
      },
    });
  }

  return {
    manager,
    client,
    informers,
    registry,
    checkpoints,
    pools,
    suspendConfirmations,
    guest,
    async start(signal) {
      await startActivity();
      for (const feature of optionalFeatures) await startOptional(feature, signal);
      await manager.start(signal);
    },
    async stop(deadlineMs) {
      stopping.abort(new Error("operator stopping"));
      await manager.stop(deadlineMs);
      client.close();
    },
  };
}
