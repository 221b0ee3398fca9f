// One hook's attempts: retries with a doubling backoff on the injected clock, a later success, and
// failures reported bounded and without the command (vk-cocoon's SSH errors quote it).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import {
  ExecProtocolError,
  type ExecRequest,
  type ExecResult,
  ExecTimeoutError,
  type PodExecutor,
} from "../../../src/controller/exec.ts";
import { PODS } from "../../../src/controller/resources.ts";
import type { HookRun } from "../../../src/guest/decide.ts";
import { MAX_REPORTED_OUTPUT } from "../../../src/guest/keys.ts";
import { bounded, runHook } from "../../../src/guest/run.ts";
import { FakeClient, type FakeExecAnswer } from "../../support/fakeclient.ts";
import { guestSet, member, NS, SteppingClock } from "./fixture.ts";

const SECRET_COMMAND = ["sh", "-c", "curl -H 'token: s3cr3t' https://vault/unseal"];

function run(extra: Partial<HookRun> = {}): HookRun {
  return {
    name: "unseal",
    point: "PostClone",
    command: SECRET_COMMAND,
    timeoutMs: 30_000,
    failurePolicy: "Fail",
    retries: 0,
    backoffMs: 2000,
    ...extra,
  };
}

/** A FakeClient with the member seeded, answering each exec from `answers` in turn (the last repeats). */
function guest(answers: FakeExecAnswer[]) {
  const client = new FakeClient();
  const clock = new SteppingClock();
  client.execClock = clock;
  client.seed(PODS, member(guestSet()));
  const requests: ExecRequest[] = [];
  let i = 0;
  client.onExec((request: ExecRequest, _pod: Pod) => {
    requests.push(request);
    const answer = answers[Math.min(i, answers.length - 1)] ?? {};
    i++;
    return answer;
  });
  const target = {
    namespace: NS,
    pod: "demo-0",
    executor: client,
    clock,
    signal: new AbortController().signal,
  };
  return { client, clock, requests, target };
}

describe("runHook", () => {
  it("retries with a doubling backoff on the injected clock, and fails with the last attempt's reason", async () => {
    const g = guest([{ exitCode: 3 }]);
    const outcome = await runHook(g.target, run({ retries: 3 }), undefined);
    assert.deepEqual(g.clock.slept, [2000, 4000, 8000]);
    assert.equal(g.requests.length, 4);
    assert.deepEqual(outcome, {
      ok: false,
      attempts: 4,
      durationMs: 14_000,
      message: "exited with status 3",
    });
  });

  it("succeeds on a later attempt and stops there", async () => {
    const g = guest([{ providerError: "pod ns/demo-0 has no live VM" }, { exitCode: 0, stdout: "ok" }]);
    const outcome = await runHook(g.target, run({ retries: 5, backoffMs: 500 }), undefined);
    assert.deepEqual(outcome, { ok: true, attempts: 2, durationMs: 500, message: "" });
    assert.deepEqual(g.clock.slept, [500]);
  });

  it("tries once more at once when the connection is lost before a status, beside its own retries", async () => {
    const g = guest([{ exitCode: 0 }]);
    const answers: (() => Promise<ExecResult>)[] = [
      () => Promise.reject(new ExecProtocolError("exec in ns/demo-0: connection closed without a status")),
      () => Promise.reject(new ExecProtocolError("exec in ns/demo-0: connection closed without a status")),
    ];
    const executor: PodExecutor = {
      exec: (request) => answers.shift()?.() ?? g.client.exec(request),
    };
    // No retries of its own: the first lost connection is tried again at once, the second is a failure.
    const lost = await runHook({ ...g.target, executor }, run(), undefined);
    assert.deepEqual(lost, {
      ok: false,
      attempts: 2,
      durationMs: 0,
      message: "exec in ns/demo-0: connection closed without a status",
    });
    // One lost connection, then the hook runs: it succeeds without a retry of its own.
    answers.push(() => Promise.reject(new ExecProtocolError("connection closed without a status")));
    assert.deepEqual(await runHook({ ...g.target, executor }, run(), undefined), {
      ok: true,
      attempts: 2,
      durationMs: 0,
      message: "",
    });
    assert.deepEqual(g.clock.slept, [], "no backoff before the extra attempt");
  });

  it("sends the same stdin, deadline and output bound to every attempt", async () => {
    const g = guest([{ exitCode: 1 }]);
    const stdin = Buffer.from("ctx\n");
    await runHook(g.target, run({ retries: 1, timeoutMs: 7000 }), stdin);
    assert.equal(g.requests.length, 2);
    for (const r of g.requests) {
      assert.deepEqual(Buffer.from(r.stdin ?? []), stdin);
      assert.equal(r.timeoutMs, 7000);
      assert.deepEqual(r.command, SECRET_COMMAND);
      assert.equal(r.maxOutputBytes, 4096);
    }
  });

  it("reports a timeout by the hook's deadline", async () => {
    const g = guest([{ hang: true }]);
    const outcome = await runHook(g.target, run({ timeoutMs: 5000 }), undefined);
    assert.equal(outcome.ok, false);
    assert.equal(outcome.message, "timed out after 5s");
    assert.equal(outcome.durationMs, 5000, "the deadline ran on the injected clock");
  });

  it("reports vk-cocoon's 'ssh exec CMD on IP: Process exited with status 3' as the status alone", async () => {
    const g = guest([{ exitCode: 3 }]);
    const outcome = await runHook(g.target, run(), undefined);
    assert.equal(outcome.message, "exited with status 3");
    for (const word of SECRET_COMMAND) assert.ok(!outcome.message.includes(word), `no ${word}`);
  });

  it("keeps an SSH error's own words and drops the command it quotes", async () => {
    const g = guest([
      {
        providerError: "ssh exec sh -c curl -H 'token: s3cr3t' on 10.0.0.10: dial 10.0.0.10:22: i/o timeout",
      },
    ]);
    const outcome = await runHook(g.target, run(), undefined);
    assert.match(outcome.message, /dial 10\.0\.0\.10:22: i\/o timeout$/);
    assert.ok(!outcome.message.includes("s3cr3t"));
    assert.ok(!outcome.message.includes("curl"));
  });

  it("bounds what it reports to MAX_REPORTED_OUTPUT characters", async () => {
    const g = guest([{ providerError: `boom ${"x".repeat(5000)}` }]);
    const outcome = await runHook(g.target, run(), undefined);
    assert.equal(outcome.message.length, MAX_REPORTED_OUTPUT);
    assert.ok(outcome.message.endsWith("…"));
    assert.equal(bounded("a\n  b\tc"), "a b c", "whitespace flattened");
    assert.equal(
      bounded("y".repeat(MAX_REPORTED_OUTPUT)).length,
      MAX_REPORTED_OUTPUT,
      "not cut at the bound",
    );
  });

  it("fails an attempt a kubelet reports with a non-zero exit code, with bounded stderr", async () => {
    const clock = new SteppingClock();
    const exits: ExecResult[] = [
      {
        exitCode: 42,
        stdout: Buffer.from(""),
        stderr: Buffer.from(`no disk ${"e".repeat(1000)}`),
        stdoutTruncated: false,
        stderrTruncated: false,
        transport: "spdy",
      },
      {
        exitCode: 0,
        stdout: Buffer.from(""),
        stderr: Buffer.from(""),
        stdoutTruncated: false,
        stderrTruncated: false,
        transport: "spdy",
      },
    ];
    let calls = 0;
    const executor: PodExecutor = { exec: async () => exits[Math.min(calls++, 1)] as ExecResult };
    const target = { namespace: NS, pod: "demo-0", executor, clock, signal: new AbortController().signal };
    const failed = await runHook(target, run(), undefined);
    assert.equal(failed.ok, false);
    assert.match(failed.message, /^exited with status 42: no disk e+/);
    assert.equal(failed.message.length, MAX_REPORTED_OUTPUT, "the whole message is bounded, status included");
    const retried = await runHook(target, run({ retries: 1 }), undefined);
    assert.equal(retried.ok, true);
  });

  it("bounds a timeout's message with the stderr read until the deadline", async () => {
    const clock = new SteppingClock();
    const executor: PodExecutor = {
      exec: async () => {
        throw new ExecTimeoutError("ended", Buffer.from(""), Buffer.from(`waiting ${"w".repeat(1000)}`));
      },
    };
    const target = { namespace: NS, pod: "demo-0", executor, clock, signal: new AbortController().signal };
    const outcome = await runHook(target, run({ timeoutMs: 30_000 }), undefined);
    assert.match(outcome.message, /^timed out after 30s: waiting w+…$/);
    assert.equal(outcome.message.length, MAX_REPORTED_OUTPUT);
  });

  it("gives up at once when its signal is aborted", async () => {
    const g = guest([{ exitCode: 1 }]);
    const abort = new AbortController();
    abort.abort(new Error("stopping"));
    await assert.rejects(runHook({ ...g.target, signal: abort.signal }, run({ retries: 2 }), undefined));
  });
});
