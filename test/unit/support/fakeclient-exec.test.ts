// FakeClient's exec seam, where the integration parity test cannot reach: a scripted hang ends at the
// caller's abort or at timeoutMs on the fake's exec clock, every exec is recorded as create
// pods/exec, and an exec without a script is refused.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import { FakeClock } from "../../../src/clock.ts";
import { ExecTimeoutError } from "../../../src/controller/exec.ts";
import { PODS } from "../../../src/controller/resources.ts";
import { FakeClient } from "../../support/fakeclient.ts";

function withRunningPod(): FakeClient {
  const fake = new FakeClient();
  fake.seed(PODS, {
    metadata: { name: "p", namespace: "n" },
    spec: { containers: [{ name: "agent", image: "i" }] },
    status: { phase: "Running" },
  } as Pod);
  return fake;
}

describe("FakeClient exec", () => {
  it("records the exec as create pods/exec with its command and stdin", async () => {
    const fake = withRunningPod();
    fake.onExec(() => ({ stdout: "ok" }));
    const result = await fake.exec({ namespace: "n", pod: "p", command: ["cat"], stdin: Buffer.from("in") });
    assert.equal(result.stdout.toString(), "ok");
    assert.deepEqual(
      fake.writes().map((c) => [c.verb, c.resource, c.subresource, c.body]),
      [["create", "pods", "exec", { command: ["cat"], stdin: Buffer.from("in") }]],
    );
  });

  it("a scripted hang ends at timeoutMs on the exec clock, not before", async () => {
    const fake = withRunningPod();
    const clock = new FakeClock();
    fake.execClock = clock;
    fake.onExec(() => ({ hang: true }));
    let settled = false;
    const outcome = fake.exec({ namespace: "n", pod: "p", command: ["sleep", "infinity"], timeoutMs: 1000 });
    void outcome
      .catch(() => undefined)
      .finally(() => {
        settled = true;
      });
    await new Promise((resolve) => setImmediate(resolve));
    clock.advance(999);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false);
    clock.advance(1);
    await assert.rejects(outcome, ExecTimeoutError);
  });

  it("a scripted hang ends at the caller's abort", async () => {
    const fake = withRunningPod();
    fake.onExec(() => ({ hang: true }));
    const abort = new AbortController();
    const outcome = fake.exec({
      namespace: "n",
      pod: "p",
      command: ["sleep", "infinity"],
      signal: abort.signal,
    });
    abort.abort();
    await assert.rejects(outcome, ExecTimeoutError);
  });

  it("refuses an exec nothing scripted", async () => {
    await assert.rejects(
      withRunningPod().exec({ namespace: "n", pod: "p", command: ["true"] }),
      /no exec scripted/,
    );
  });
});
