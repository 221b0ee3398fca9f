// A real Prometheus (Debian's `prometheus` package) on loopback, scraping the given targets every
// second as the job cocoon-operator-metrics (the job name the ServiceMonitor gives a cluster's scrape,
// so the dashboard's and alerts' selectors match), with its data in a temporary directory.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { probeHealthy } from "./kubeapi.ts";
import { freePort, retryOnPortClash } from "./ports.ts";
import { removeDirectoryOnExit, startReadyDaemon } from "./process.ts";

export const SCRAPE_JOB = "cocoon-operator-metrics";

export interface PrometheusServer {
  url: string;
  /** One instant query; the API's `data` (resultType and result), or the error it answered with. */
  query(expr: string): Promise<PromQueryResult>;
  stop(): Promise<void>;
}

export type PromQueryResult =
  | { status: "success"; data: { resultType: string; result: { metric: Record<string, string> }[] } }
  | { status: "error"; errorType: string; error: string };

export async function startPrometheus(targets: string[]): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), "cocoon-prometheus-"));
  removeDirectoryOnExit(dir);
  const config = {
    global: { scrape_interval: "1s", evaluation_interval: "1s" },
    scrape_configs: [{ job_name: SCRAPE_JOB, static_configs: [{ targets }] }],
  };
  writeFileSync(join(dir, "prometheus.yml"), stringify(config));
  const { daemon, url } = await retryOnPortClash(async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const daemon = await startReadyDaemon(
      {
        name: "prometheus",
        command: "prometheus",
        args: [
          `--config.file=${join(dir, "prometheus.yml")}`,
          `--storage.tsdb.path=${join(dir, "data")}`,
          `--web.listen-address=127.0.0.1:${port}`,
          "--web.enable-lifecycle",
        ],
        logFile: join(dir, "prometheus.log"),
        stopGraceMs: 5_000,
      },
      "prometheus ready",
      () => probeHealthy(`${url}/-/ready`),
    );
    return { daemon, url };
  });
  return {
    url,
    async query(expr) {
      const res = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: expr })}`);
      return (await res.json()) as PromQueryResult;
    },
    async stop() {
      await daemon.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
