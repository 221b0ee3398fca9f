// Measuring settled passes on the real environment (the integration test of a settled pass and
// bench/settled.ts share it): an in-process operator whose every API request (KubeClient.onRequest),
// registry HTTP exchange and CocoonHibernation list of the cached view is counted, a wait for the
// operator to go quiet, and runs that reconcile each set once through a CocoonSetReconciler over the
// operator's own cached view and report what those passes cost. Both also settle some sets in
// Phase=Suspended (suspendSets), whose passes must cost nothing either.

import type { CocoonSet } from "../../src/apis/v1/types.ts";
import { systemClock } from "../../src/clock.ts";
import { CocoonSetReconciler } from "../../src/cocoonset/reconciler.ts";
import { InformerCocoonSetView } from "../../src/cocoonset/view.ts";
import type { RequestInfo } from "../../src/controller/client.ts";
import type { EventRecorder } from "../../src/controller/events.ts";
import { KubeExecutor } from "../../src/controller/exec.ts";
import type { Reconciler } from "../../src/controller/reconciler.ts";
import { GuestReconciler } from "../../src/guest/reconciler.ts";
import { log } from "../../src/log.ts";
import type { Operator } from "../../src/operator.ts";
import { createRegistryClient, type RegistryClient } from "../../src/registry/index.ts";
import { type ApiConnection, apiRequest, waitFor } from "../env/testenv.ts";

export const WRITE_VERBS: ReadonlySet<string> = new Set([
  "create",
  "update",
  "patch",
  "delete",
  "deletecollection",
]);

/** What one run (every named set reconciled once, plus a second for what the passes set off) cost. */
export interface SettledRun {
  /** Non-watch API requests, `<verb> <resource>` → count. */
  requests: Record<string, number>;
  writes: number;
  registry: number;
  registryByMethod: Record<string, number>;
  chLists: number;
  events: number;
  /** Wall time of each pass, ms. */
  passMs: number[];
  /** The distinct reconcile results, as JSON. */
  results: string[];
}

export class SettledPassProbe {
  /** The registry client to hand the operator: every HTTP exchange it makes is counted. */
  readonly registry: RegistryClient;
  private registryRequests = 0;
  private readonly registryByMethod: Record<string, number> = {};
  private apiRequests = 0;
  private chLists = 0;
  private lastRequestAt = performance.now();
  private recording = false;
  private readonly window: RequestInfo[] = [];
  private operator: Operator | undefined;

  constructor(registryBase: string) {
    this.registry = createRegistryClient(registryBase, {
      logger: log,
      onRequest: (method) => {
        this.registryRequests++;
        this.registryByMethod[method] = (this.registryByMethod[method] ?? 0) + 1;
      },
    });
  }

  /** Starts counting the started operator's API requests and its view's CocoonHibernation lists. */
  attach(operator: Operator): void {
    this.operator = operator;
    const { hibernations } = operator.informers;
    const list = hibernations.list.bind(hibernations);
    hibernations.list = (...args: Parameters<typeof list>) => {
      this.chLists++;
      return list(...args);
    };
    operator.client.onRequest((req) => {
      if (req.verb === "watch") return;
      this.apiRequests++;
      this.lastRequestAt = performance.now();
      if (this.recording) this.window.push(req);
    });
  }

  /** Every non-watch API request and registry HTTP exchange counted since attach (the counters work). */
  totals(): { apiRequests: number; registryRequests: number } {
    return { apiRequests: this.apiRequests, registryRequests: this.registryRequests };
  }

  /** Resolves once neither the API server (watches aside) nor the registry was asked anything for quietMs. */
  async waitForQuiet(quietMs: number): Promise<void> {
    for (let lastRegistry = this.registryRequests; ; ) {
      await sleep(500);
      const quiet =
        performance.now() - this.lastRequestAt > quietMs && this.registryRequests === lastRegistry;
      lastRegistry = this.registryRequests;
      if (quiet) return;
    }
  }

  /**
   * Reconciles each named object of the namespace once, then waits a second for what the passes set
   * off. The reconciler is a CocoonSetReconciler over the operator's own cached view unless
   * `reconcilerOf` builds another (a pool's, a claim's) over the operator's client and caches.
   */
  async run(
    namespace: string,
    names: readonly string[],
    reconcilerOf?: (operator: Operator, events: EventRecorder) => Reconciler,
  ): Promise<SettledRun> {
    const operator = this.operator;
    if (!operator) throw new Error("SettledPassProbe.run before attach");
    let events = 0;
    const recorder: EventRecorder = { event: () => void events++ };
    const reconciler =
      reconcilerOf?.(operator, recorder) ??
      new CocoonSetReconciler({
        client: operator.client,
        view: new InformerCocoonSetView(operator.informers),
        registry: this.registry,
        events: recorder,
        clock: systemClock,
        log: log.child({ controller: "settled-pass" }),
        // The operator's own memory of confirmed suspends: these passes are its settled passes, not a restart's.
        suspendConfirmations: operator.suspendConfirmations,
        ...(operator.guest ? { guest: operator.guest.gate } : {}),
      });
    this.window.length = 0;
    const registryBefore = this.registryRequests;
    const byMethodBefore = { ...this.registryByMethod };
    const chBefore = this.chLists;
    const passMs: number[] = [];
    const results = new Set<string>();
    this.recording = true;
    for (const name of names) {
      const started = performance.now();
      const result = await reconciler.reconcile({ namespace, name }, new AbortController().signal);
      passMs.push(performance.now() - started);
      results.add(JSON.stringify(result));
    }
    await sleep(1_000);
    this.recording = false;
    const requests: Record<string, number> = {};
    for (const req of this.window) {
      const key = `${req.verb} ${req.resource}`;
      requests[key] = (requests[key] ?? 0) + 1;
    }
    const registryByMethod: Record<string, number> = {};
    for (const [method, count] of Object.entries(this.registryByMethod)) {
      const delta = count - (byMethodBefore[method] ?? 0);
      if (delta > 0) registryByMethod[method] = delta;
    }
    return {
      requests,
      writes: this.window.filter((req) => WRITE_VERBS.has(req.verb)).length,
      registry: this.registryRequests - registryBefore,
      registryByMethod,
      chLists: this.chLists - chBefore,
      events,
      passMs,
      results: [...results],
    };
  }
}

/**
 * The guest hooks reconciler over the operator's own caches, client and shared parts, with an
 * executor that counts: a settled pod must cost no exec (nor any other request).
 */
export function guestReconcilerOf(
  operator: Operator,
  events: EventRecorder,
  executions: { count: number },
): Reconciler {
  const guest = operator.guest;
  if (!guest) throw new Error("the operator runs with guest hooks off");
  const executor = new KubeExecutor(operator.client);
  return new GuestReconciler({
    client: operator.client,
    view: {
      getPod: (namespace, name) => operator.informers.pods.get(namespace, name),
      getCocoonSet: (namespace, name) => operator.informers.cocoonSets.get(namespace, name),
    },
    policy: (namespace, name) => guest.catalog.policy(namespace, name),
    executor: {
      exec: (request) => {
        executions.count++;
        return executor.exec(request);
      },
    },
    requests: guest.requests,
    events,
    clock: systemClock,
    log: log.child({ controller: "settled-guest-pass" }),
  });
}

/**
 * Suspends the named sets (hibernatePolicy retain: the pods stay, each VM hibernated and its
 * `:hibernate` tag pushed) and resolves once every one reports Phase=Suspended.
 */
export async function suspendSets(
  conn: ApiConnection,
  namespace: string,
  names: readonly string[],
  timeoutMs = 120_000,
): Promise<void> {
  const path = (name: string) =>
    `/apis/cocoonset.cocoonstack.io/v1/namespaces/${namespace}/cocoonsets/${name}`;
  for (const name of names) {
    const res = await apiRequest(
      conn,
      "PATCH",
      path(name),
      { spec: { suspend: true } },
      "application/merge-patch+json",
    );
    if (res.status !== 200) throw new Error(`suspend ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  for (const name of names) {
    await waitFor(
      `${name} Suspended`,
      async () => {
        const res = await apiRequest(conn, "GET", path(name));
        return (res.body as CocoonSet).status?.phase === "Suspended" ? true : undefined;
      },
      timeoutMs,
    );
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
