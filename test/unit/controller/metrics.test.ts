import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseBindAddress } from "../../../src/controller/httpserver.ts";
import {
  metricsRegistry,
  recordRestRequest,
  setLeaderStatus,
  startMetricsServer,
  workQueueMetrics,
} from "../../../src/controller/metrics.ts";

describe("parseBindAddress", () => {
  const cases: [string, ReturnType<typeof parseBindAddress>][] = [
    [":8080", { host: undefined, port: 8080 }],
    ["127.0.0.1:0", { host: "127.0.0.1", port: 0 }],
    ["[::1]:9090", { host: "::1", port: 9090 }],
    ["0", undefined],
  ];
  for (const [address, expected] of cases) {
    it(`parses ${JSON.stringify(address)}`, () => assert.deepEqual(parseBindAddress(address), expected));
  }

  it("rejects an address without a valid port", () => {
    assert.throws(() => parseBindAddress("localhost"));
    assert.throws(() => parseBindAddress(":http"));
    assert.throws(() => parseBindAddress(":70000"));
  });
});

describe("metrics endpoint", () => {
  it("serves the controller-runtime, workqueue, leader, REST client and process metrics", async () => {
    const queue = workQueueMetrics("metrics-test");
    queue.added();
    queue.depth(3);
    queue.observeInFlight(() => ({ unfinishedSeconds: 4.5, longestRunningSeconds: 2 }));
    setLeaderStatus("cocoon-operator.cocoonset.cocoonstack.io", true);
    recordRestRequest({ verb: "get", code: 200, host: "10.0.0.1:6443" });

    const endpoint = await startMetricsServer("127.0.0.1:0");
    assert.ok(endpoint);
    try {
      const response = await fetch(`http://127.0.0.1:${endpoint.port}/metrics`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get("content-type") ?? "", /^text\/plain/);
      const body = await response.text();
      for (const name of [
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds",
        "controller_runtime_active_workers",
        "controller_runtime_max_concurrent_reconciles",
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds",
        "workqueue_retries_total",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "leader_election_master_status",
        "rest_client_requests_total",
        "process_cpu_user_seconds_total",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_start_time_seconds",
        "process_open_fds",
        "nodejs_heap_size_used_bytes",
      ]) {
        assert.match(body, new RegExp(`^# TYPE ${name} `, "m"), name);
      }
      assert.match(
        body,
        /^workqueue_depth\{name="metrics-test",controller="metrics-test",priority="0"\} 3$/m,
      );
      assert.match(body, /^workqueue_adds_total\{name="metrics-test",controller="metrics-test"\} 1$/m);
      assert.match(
        body,
        /^workqueue_unfinished_work_seconds\{name="metrics-test",controller="metrics-test"\} 4.5$/m,
      );
      assert.match(
        body,
        /^leader_election_master_status\{name="cocoon-operator.cocoonset.cocoonstack.io"\} 1$/m,
      );
      assert.match(body, /^rest_client_requests_total\{code="200",method="GET",host="10.0.0.1:6443"\} 1$/m);
      const rss = Number(/^process_resident_memory_bytes (\d+)$/m.exec(body)?.[1]);
      assert.ok(rss > 10 * 2 ** 20, `process_resident_memory_bytes ${rss}`);

      const missing = await fetch(`http://127.0.0.1:${endpoint.port}/other`);
      assert.equal(missing.status, 404);
      await missing.text();
    } finally {
      queue.release();
      await endpoint.close();
    }
  });

  it('is disabled by the address "0"', async () => {
    assert.equal(await startMetricsServer("0"), undefined);
  });

  it("exports the registry for other collectors", () => {
    assert.ok(metricsRegistry.getSingleMetric("controller_runtime_reconcile_total"));
  });
});
