// Dashboards and alerts written for the Go operator match series by name and labels. The operator
// runs as users run it (`node src/main.ts`, leader election on); after one CocoonSet has been
// reconciled, its /metrics must serve every series the Go operator serves in that state
// (test/fixtures/go-operator-metrics.json, taken from upstream), with the same type and label names,
// and no controller-runtime or client-go family the Go operator does not have.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { freePort } from "../env/ports.ts";
import { apiRequest, createNamespace, testEnv, waitFor } from "../env/testenv.ts";
import { type ApiProxy, startApiProxy } from "../support/faultproxy.ts";
import { setsPath } from "../support/setapi.ts";

const repoRoot = resolve(import.meta.dirname, "../..");

interface FixtureFamily {
  name: string;
  type: string;
  labels: string[];
  series: Record<string, string>[];
}

const fixture = JSON.parse(
  readFileSync(join(repoRoot, "test/fixtures/go-operator-metrics.json"), "utf8"),
) as { families: FixtureFamily[] };

/** Families whose names controller-runtime and client-go own (the Go runtime's go_* / process_* aside). */
const UPSTREAM_PREFIXES = [
  "controller_runtime_",
  "workqueue_",
  "rest_client_",
  "leader_election_",
  "certwatcher_",
];

interface ScrapedFamily {
  type: string;
  /** Each sample's labels, without a histogram's `le`. */
  samples: Record<string, string>[];
}

/** The text exposition format: TYPE lines and samples, histogram parts folded into their family. */
function parseExposition(text: string): Map<string, ScrapedFamily> {
  const families = new Map<string, ScrapedFamily>();
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      families.set(type[1] ?? "", { type: type[2] ?? "", samples: [] });
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? \S+$/.exec(line);
    if (!sample) continue;
    const name = sample[1] ?? "";
    const family =
      families.get(name) ??
      families.get(name.replace(/_(bucket|sum|count)$/, "")) ??
      assert.fail(`sample ${name} has no TYPE line`);
    const labels: Record<string, string> = {};
    for (const m of (sample[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      if (m[1] !== "le") labels[m[1] ?? ""] = m[2] ?? "";
    }
    family.samples.push(labels);
  }
  return families;
}

const sameLabels = (a: Record<string, string>, b: Record<string, string>) =>
  Object.keys(a).length === Object.keys(b).length &&
  Object.entries(b).every(([k, v]) => k in a && (v === "*" || a[k] === v));

describe("metrics parity with the Go operator", () => {
  let api: ApiProxy;
  let child: ChildProcess;
  let metricsPort: number;
  const output: string[] = [];
  let ns: string;

  before(async () => {
    const env = testEnv();
    ns = await createNamespace(env, "metrics-parity");
    api = await startApiProxy(env, { namespace: ns, seed: 1 });
    metricsPort = await freePort();
    child = spawn(
      process.execPath,
      [
        "src/main.ts",
        `--metrics-bind-address=127.0.0.1:${metricsPort}`,
        "--health-probe-bind-address=0",
        "--leader-elect",
      ],
      {
        cwd: repoRoot,
        env: {
          PATH: process.env.PATH,
          HOME: "/nonexistent",
          KUBECONFIG: api.kubeconfigPath,
          OCI_REGISTRY: env.registry,
          POD_NAMESPACE: ns,
          DOCKER_CONFIG: "/nonexistent",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    for (const stream of [child.stdout, child.stderr]) {
      stream?.setEncoding("utf8").on("data", (chunk: string) => output.push(chunk));
    }
    const created = await apiRequest(env, "POST", setsPath(ns), {
      apiVersion: "cocoonset.cocoonstack.io/v1",
      kind: "CocoonSet",
      metadata: { name: "parity" },
      spec: { agent: { image: "ghcr.io/cocoonstack/cocoon/ubuntu:24.04" } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  });

  after(async () => {
    const exited = new Promise((done) => child.once("exit", done));
    child.kill("SIGTERM");
    await exited;
    await api.stop();
  });

  async function scrape(): Promise<Map<string, ScrapedFamily>> {
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    assert.equal(res.status, 200);
    return parseExposition(await res.text());
  }

  it("serves every series of the Go operator, with its type and label names, and no other upstream family", async () => {
    let scraped = new Map<string, ScrapedFamily>();
    await waitFor(
      "the operator to lead and reconcile the CocoonSet",
      async () => {
        scraped = await scrape().catch(() => new Map());
        const reconciled = scraped.get("controller_runtime_reconcile_time_seconds")?.samples ?? [];
        return reconciled.some((l) => l.controller === "cocoonset") || undefined;
      },
      60_000,
    ).catch((err: Error) => assert.fail(`${err.message}; operator output:\n${output.join("")}`));
    for (const family of fixture.families) {
      const ours = scraped.get(family.name);
      assert.ok(ours, `${family.name} is served`);
      assert.equal(ours.type, family.type, `${family.name} type`);
      for (const labels of ours.samples) {
        assert.deepEqual(Object.keys(labels).sort(), [...family.labels].sort(), `${family.name} label names`);
      }
      for (const series of family.series) {
        assert.ok(
          ours.samples.some((labels) => sameLabels(labels, series)),
          `${family.name}${JSON.stringify(series)} is served; got ${JSON.stringify(ours.samples)}`,
        );
      }
    }
    const known = new Set(fixture.families.map((f) => f.name));
    const extra = [...scraped]
      .filter(([name, f]) => f.samples.length > 0 && UPSTREAM_PREFIXES.some((p) => name.startsWith(p)))
      .map(([name]) => name)
      .filter((name) => !known.has(name));
    assert.deepEqual(extra, [], "families the Go operator does not serve");
  });

  it("labels API requests with the server's host:port, as client-go does", async () => {
    const requests = (await scrape()).get("rest_client_requests_total")?.samples ?? [];
    const hosts = new Set(requests.map((l) => l.host));
    assert.deepEqual([...hosts], [new URL(api.server).host]);
  });
});
