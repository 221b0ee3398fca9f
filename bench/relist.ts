// Benchmark 6: what a 10k-pod relist costs, the way this operator's reflector lists now (from the
// API server's watch cache: resourceVersion "0" on the first list, the last version seen on a
// re-list, gzip-compressed) against a consistent paged read without compression (what it did
// before, and what a client that skips the watch cache does). Each way lists the same pods through
// KubeClient.list, as the reflector does: wall time until every item is decoded; bytes on the wire
// counted by a proxy in a separate pass; and the API server's own counters of cache lists, consistent
// reads and etcd requests for pods.
//
//   npm run bench:relist [-- --pods 10000 --runs 5]

import { join } from "node:path";
import type { Pod } from "../src/apis/core.ts";
import { KubeClient, kubeConfigFromFile } from "../src/controller/client.ts";
import { PODS } from "../src/controller/resources.ts";
import { compactCachedPod } from "../src/informers/compact.ts";
import { apiRequest, createNamespace, createPods, IMAGE, startCluster } from "./lib/cluster.ts";
import { startCountingProxy } from "./lib/countingproxy.ts";
import { parseArgs, runBenchmark } from "./lib/lifecycle.ts";
import {
  commandLine,
  fmt,
  machine,
  machineLine,
  printSummary,
  progress,
  spread,
  table,
  writeSection,
} from "./lib/report.ts";

const LABEL_SELECTOR = "cocoonset.cocoonstack.io/name";

interface Way {
  name: string;
  /** What the reflector would send. */
  resourceVersion: string | undefined;
  limit: number | undefined;
  compression: boolean;
}

const WAYS: Way[] = [
  { name: "watch cache (resourceVersion=0), gzip", resourceVersion: "0", limit: 500, compression: true },
  {
    name: "watch cache, re-list at the last version seen (unpaged), gzip",
    resourceVersion: "<last>",
    limit: undefined,
    compression: true,
  },
  {
    name: "consistent read, pages of 500, no compression",
    resourceVersion: undefined,
    limit: 500,
    compression: false,
  },
];

function pod(ns: string, i: number): Pod {
  const set = `relist-${Math.floor(i / 10)}`;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `${set}-${i % 10}`,
      namespace: ns,
      labels: { [LABEL_SELECTOR]: set, "cocoonset.cocoonstack.io/slot": String(i % 10) },
      annotations: {
        "vm.cocoonstack.io/name": `vk-${ns}-${set}-${i % 10}`,
        "vm.cocoonstack.io/image": IMAGE,
      },
    },
    spec: {
      schedulerName: "none",
      containers: [{ name: "agent", image: IMAGE, resources: { requests: { cpu: "2", memory: "4Gi" } } }],
    },
  } as Pod;
}

/** Sums of the API server's pod counters that tell where a list was served from. */
async function serverCounters(info: Parameters<typeof apiRequest>[0]): Promise<Record<string, number>> {
  const res = await apiRequest(info, "GET", "/metrics");
  const sums: Record<string, number> = { cacheLists: 0, consistentReads: 0, etcdRequests: 0, etcdLists: 0 };
  for (const line of String(res.body).split("\n")) {
    if (!line.includes('resource="pods"')) continue;
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (line.startsWith("apiserver_cache_list_total{")) sums.cacheLists = (sums.cacheLists ?? 0) + value;
    else if (line.startsWith("apiserver_watch_cache_consistent_read_total{"))
      sums.consistentReads = (sums.consistentReads ?? 0) + value;
    else if (line.startsWith("etcd_requests_total{")) {
      sums.etcdRequests = (sums.etcdRequests ?? 0) + value;
      if (/operation="list/.test(line)) sums.etcdLists = (sums.etcdLists ?? 0) + value;
    }
  }
  return sums;
}

async function listOnce(
  client: KubeClient,
  way: Way,
  lastVersion: string,
): Promise<{ ms: number; items: number; rv: string }> {
  const started = performance.now();
  const result = await client.list<Pod>(PODS, undefined, {
    labelSelector: LABEL_SELECTOR,
    limit: way.limit,
    resourceVersion: way.resourceVersion === "<last>" ? lastVersion : way.resourceVersion,
    transform: compactCachedPod,
  });
  return { ms: performance.now() - started, items: result.items.length, rv: result.resourceVersion };
}

async function main(): Promise<void> {
  const args = parseArgs();
  const pods = args.int("pods", 10_000);
  const runs = args.int("runs", 5);

  progress("starting control plane and registry");
  const cluster = await startCluster();
  const { info } = cluster.env;
  const ns = await createNamespace(info, "bench-relist");
  progress(`creating ${pods} pods`);
  await createPods(info, ns, 0, pods, (i) => pod(ns, i));
  const proxy = await startCountingProxy(
    info,
    join(cluster.env.info.kubeconfigPath, "..", "relist-proxy.kubeconfig"),
  );

  const rows: string[][] = [];
  const summary: Record<string, unknown> = {};
  let lastVersion = "";
  for (const way of WAYS) {
    const direct = new KubeClient({
      ...kubeConfigFromFile(info.kubeconfigPath),
      disableCompression: !way.compression,
    });
    const viaProxy = new KubeClient({
      ...kubeConfigFromFile(proxy.kubeconfigPath),
      disableCompression: !way.compression,
    });
    // Warm-up, and the version a re-list would resume from.
    lastVersion = (await listOnce(direct, way, lastVersion)).rv || lastVersion;
    const before = await serverCounters(info);
    const times: number[] = [];
    let items = 0;
    for (let r = 0; r < runs; r++) {
      const once = await listOnce(direct, way, lastVersion);
      times.push(once.ms);
      items = once.items;
    }
    const after = await serverCounters(info);
    const bytesBefore = proxy.counts().responseBytes;
    const requestsBefore = proxy.counts().total;
    await listOnce(viaProxy, way, lastVersion);
    const bytes = proxy.counts().responseBytes - bytesBefore;
    const requests = proxy.counts().total - requestsBefore;
    direct.close();
    viaProxy.close();
    const perList = (key: string) => ((after[key] ?? 0) - (before[key] ?? 0)) / runs;
    progress(`${way.name}: ${fmt(spread(times), 0)} ms, ${(bytes / 2 ** 20).toFixed(2)} MiB`);
    if (items !== pods) throw new Error(`${way.name}: listed ${items} pods, expected ${pods}`);
    rows.push([
      way.name,
      fmt(spread(times), 0),
      (bytes / 2 ** 20).toFixed(2),
      String(requests),
      perList("cacheLists").toFixed(1),
      perList("consistentReads").toFixed(1),
      perList("etcdRequests").toFixed(1),
      perList("etcdLists").toFixed(1),
    ]);
    summary[way.name] = { msMedian: +spread(times).median.toFixed(0), bytes, requests };
  }

  writeSection(
    "6-relist:ts",
    `6. Relist of ${pods} pods: watch cache and gzip against a consistent paged read`,
    `Machine: ${machineLine(machine())}
Command: \`${commandLine("bench:relist")}\`

${pods} pods (label \`${LABEL_SELECTOR}\`, \`schedulerName: none\`) on the real control plane. Each way lists them
all with this operator's \`KubeClient.list\` and the pod cache's per-item transform, as the reflector
does: ${runs} timed lists after one warm-up (wall time until the last item is decoded); the bytes are the
response bodies of one more list through a counting proxy (as sent: compressed when gzip was
negotiated). The API server's counters are per list: \`apiserver_cache_list_total\` (served by the watch
cache), \`apiserver_watch_cache_consistent_read_total\` (a consistent read answered from the cache after
asking etcd for its current revision), \`etcd_requests_total\` (all operations; lists among them).

${table(
  [
    "way",
    "time ms",
    "MiB on the wire",
    "HTTP requests",
    "cache lists",
    "consistent reads",
    "etcd requests",
    "etcd lists",
  ],
  rows,
)}`,
  );
  printSummary({ bench: "relist", pods, runs, results: summary });
}

runBenchmark(main);
