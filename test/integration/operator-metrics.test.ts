// The operator exports client-go's rest_client_requests_total for its own API traffic.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { metricsRegistry } from "../../src/controller/metrics.ts";
import { createNamespace, testEnv } from "../env/testenv.ts";
import { startTestOperator, type TestOperator } from "../support/operator.ts";

async function restRequests(): Promise<number> {
  const metric = (await metricsRegistry.getMetricsAsJSON()).find(
    (m) => m.name === "rest_client_requests_total",
  );
  return (metric?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

describe("operator metrics", () => {
  let op: TestOperator;

  before(async () => {
    const ns = await createNamespace(testEnv(), "metrics");
    op = await startTestOperator({ namespace: ns });
  });

  after(() => op.stop());

  it("counts every API request in rest_client_requests_total by code, method and host", async () => {
    const apiRequests = [...op.client.requestCounts().values()].reduce((a, b) => a + b, 0);
    assert.ok(apiRequests > 0, "the informers listed and watched");
    assert.ok((await restRequests()) >= apiRequests);
    const text = await metricsRegistry.metrics();
    assert.match(
      text,
      /^rest_client_requests_total\{code="200",method="GET",host="127\.0\.0\.1:\d+"\} \d+$/m,
    );
  });
});
