// /healthz (liveness: the process and its event loop answer) and /readyz (every readiness check
// passes, e.g. the informer caches have synced) on the probe address. Liveness deliberately does not
// depend on the API server, which would turn an API outage into cascading restarts.
import { type HttpEndpoint, parseBindAddress, type RouteHandler, serve } from "./httpserver.ts";

/** Passes by returning; fails by throwing (the message is shown in the probe's body). */
export type Checker = () => void | Promise<void>;

export class HealthProbes {
  private readonly healthChecks = new Map<string, Checker>();
  private readonly readyChecks = new Map<string, Checker>();

  addHealthCheck(name: string, check: Checker): void {
    this.healthChecks.set(name, check);
  }

  addReadyCheck(name: string, check: Checker): void {
    this.readyChecks.set(name, check);
  }

  /** Names of the failing checks with their reasons; empty when all pass. */
  async failing(kind: "healthz" | "readyz"): Promise<string[]> {
    const checks = kind === "healthz" ? this.healthChecks : this.readyChecks;
    const failures: string[] = [];
    for (const [name, check] of checks) {
      try {
        await check();
      } catch (err) {
        failures.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    return failures;
  }

  /** Serves both endpoints; undefined when the address is "0". */
  async start(address: string): Promise<HttpEndpoint | undefined> {
    const bind = parseBindAddress(address);
    if (!bind) return undefined;
    return serve(bind, { "/healthz": this.endpoint("healthz"), "/readyz": this.endpoint("readyz") });
  }

  private endpoint(kind: "healthz" | "readyz"): RouteHandler {
    return async (_req, res) => {
      const failures = await this.failing(kind);
      const body =
        failures.length === 0
          ? "ok\n"
          : `${failures.map((f) => `[-]${f}`).join("\n")}\n${kind} check failed\n`;
      res
        .writeHead(failures.length === 0 ? 200 : 500, { "content-type": "text/plain; charset=utf-8" })
        .end(body);
    };
  }
}

/** A readiness check that passes once every source reports its cache synced. */
export function cachesSynced(sources: readonly { hasSynced(): boolean }[]): Checker {
  return () => {
    if (!sources.every((source) => source.hasSynced())) throw new Error("informer caches not synced");
  };
}
