// The manager runs the process's shared pieces in controller-runtime's order: metrics and probe
// servers, then informers (on every replica, so standbys are ready too), then — once caches have
// synced and, with leader election, this replica leads — the controllers.
import { log } from "../log.ts";
import type { Controller } from "./controller.ts";
import type { HttpEndpoint } from "./httpserver.ts";
import { type SecureMetrics, setLeaderStatus, startMetricsServer } from "./metrics.ts";
import { cachesSynced, HealthProbes } from "./probes.ts";

/** What the manager needs of an informer (cache.ts). */
export interface ManagedInformer {
  start(signal: AbortSignal): void;
  hasSynced(): boolean;
  waitForSync(signal?: AbortSignal): Promise<void>;
}

export interface LeaderCallbacks {
  onStartedLeading(signal: AbortSignal): void;
  onStoppedLeading(): void;
}

/** What the manager needs of the elector (leaderelection.ts): aborting signal releases the lease. */
export interface ManagedLeaderElector {
  run(callbacks: LeaderCallbacks, signal: AbortSignal): Promise<void>;
}

export interface ManagerOptions {
  /** ":8080" form; "0" disables. Default ":8080". */
  metricsBindAddress?: string;
  /** Serve /metrics over HTTPS to authorized callers only; default plain HTTP to anyone. */
  secureMetrics?: SecureMetrics;
  /** ":8081" form; "0" disables. Default ":8081". */
  healthProbeBindAddress?: string;
  /** Without one, controllers start as soon as caches have synced. */
  leaderElector?: ManagedLeaderElector;
  /** The lease name, the label of leader_election_master_status. */
  leaderElectionId?: string;
  /** Called when leadership is lost while running; default exits the process like controller-runtime. */
  onLeadershipLost?: () => void;
}

function exitOnLeadershipLost(): void {
  log.error("leader election lost");
  process.exit(1);
}

export class Manager {
  readonly probes = new HealthProbes();
  private readonly options: ManagerOptions;
  private readonly informers: ManagedInformer[] = [];
  private readonly controllers: Controller[] = [];
  private readonly informerAbort = new AbortController();
  private readonly electionAbort = new AbortController();
  private endpoints: { metrics?: HttpEndpoint; probes?: HttpEndpoint } = {};
  private election: Promise<void> | undefined;
  private started = false;
  private stopping = false;
  private controllersStarted = false;

  constructor(options: ManagerOptions = {}) {
    this.options = options;
    this.probes.addHealthCheck("ping", () => {});
    this.probes.addReadyCheck("informers", cachesSynced(this.informers));
  }

  /**
   * Informers are shared: each is started once by the manager, whatever number of controllers use it.
   * One added after start() (a kind the cluster began serving later) starts at once.
   */
  addInformer(informer: ManagedInformer): void {
    if (this.informers.includes(informer)) return;
    this.informers.push(informer);
    if (this.started && !this.stopping) informer.start(this.informerAbort.signal);
  }

  /**
   * One added after the controllers started starts once every cache, its own among them, has synced.
   * Controllers start only while leading, so a late one is under the lease like the rest.
   */
  addController(controller: Controller): void {
    this.controllers.push(controller);
    if (this.controllersStarted) void this.afterSync(() => controller.start());
  }

  /** Bound ports (after start), for callers that asked for port 0. */
  ports(): { metrics?: number; probes?: number } {
    return { metrics: this.endpoints.metrics?.port, probes: this.endpoints.probes?.port };
  }

  /**
   * Starts servers and informers, and resolves once they are listening and running. Controllers start
   * later, when caches have synced and leadership is held. Aborting signal stops everything at once.
   */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.started) throw new Error("manager already started");
    this.started = true;
    const metrics = await startMetricsServer(
      this.options.metricsBindAddress ?? ":8080",
      this.options.secureMetrics,
    );
    const probes = await this.probes.start(this.options.healthProbeBindAddress ?? ":8081");
    this.endpoints = { metrics, probes };
    log.info({ metricsPort: metrics?.port, probePort: probes?.port }, "Serving metrics and health probes");

    for (const informer of this.informers) informer.start(this.informerAbort.signal);
    signal?.addEventListener("abort", () => void this.stop(0), { once: true });

    const elector = this.options.leaderElector;
    if (!elector) {
      void this.afterSync(() => this.startControllers());
      return;
    }
    this.election = elector.run(
      {
        onStartedLeading: () => {
          this.setLeading(true);
          void this.afterSync(() => this.startControllers());
        },
        onStoppedLeading: () => this.leadershipEnded(),
      },
      this.electionAbort.signal,
    );
  }

  /**
   * Graceful shutdown: controllers take no more work and in-flight reconciles get up to deadlineMs to
   * finish; then the lease is released, informers stopped and servers closed.
   */
  async stop(deadlineMs: number): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    await Promise.all(this.controllers.map((controller) => controller.stop(deadlineMs)));
    this.electionAbort.abort(new Error("manager stopping"));
    await this.election?.catch((err: unknown) => log.warn({ err }, "leader election ended with an error"));
    this.informerAbort.abort(new Error("manager stopping"));
    await Promise.all([this.endpoints.metrics?.close(), this.endpoints.probes?.close()]);
    log.info("Manager stopped");
  }

  /**
   * Runs start once every informer added so far has synced, checked just before the call: one added
   * while waiting (with its controller) is waited for too. Not at all if a sync fails or stop() began.
   */
  private async afterSync(start: () => void): Promise<void> {
    while (!this.informers.every((informer) => informer.hasSynced())) {
      if (!(await this.waitForCaches())) return;
    }
    if (!this.stopping) start();
  }

  private async waitForCaches(): Promise<boolean> {
    try {
      await Promise.all(this.informers.map((informer) => informer.waitForSync(this.informerAbort.signal)));
      return true;
    } catch (err) {
      if (!this.informerAbort.signal.aborted) log.error({ err }, "informer caches failed to sync");
      return false;
    }
  }

  private startControllers(): void {
    if (this.controllersStarted) return;
    this.controllersStarted = true;
    for (const controller of this.controllers) controller.start();
  }

  private setLeading(leading: boolean): void {
    if (this.options.leaderElectionId) setLeaderStatus(this.options.leaderElectionId, leading);
  }

  /** The elector calls this on release during stop() too; only a loss while running is fatal. */
  private leadershipEnded(): void {
    this.setLeading(false);
    if (this.stopping) return;
    const reason = new Error("leader election lost");
    for (const controller of this.controllers) controller.stopNow(reason);
    (this.options.onLeadershipLost ?? exitOnLeadershipLost)();
  }
}
