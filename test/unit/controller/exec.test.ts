// The pure parts of exec: the error stream's Status as an exit code or a typed error, the bound on
// captured output, the subresource's query, and the Running check.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import {
  BoundedCapture,
  ExecFailedError,
  ExecPodNotRunningError,
  ExecProtocolError,
  execQuery,
  exitCodeFromStatus,
  requireRunning,
} from "../../../src/controller/exec.ts";

const status = (s: object) => Buffer.from(JSON.stringify(s));

describe("exitCodeFromStatus", () => {
  it("is 0 for Success and for an empty error stream", () => {
    assert.equal(exitCodeFromStatus(status({ metadata: {}, status: "Success" })), 0);
    assert.equal(exitCodeFromStatus(Buffer.alloc(0)), 0);
  });

  it("is the ExitCode cause of a NonZeroExitCode failure (a cause's type is sent as reason)", () => {
    const failure = {
      status: "Failure",
      reason: "NonZeroExitCode",
      message: "command terminated with non-zero exit code: exit status 7",
      details: { causes: [{ reason: "ExitCode", message: "7" }] },
    };
    assert.equal(exitCodeFromStatus(status(failure)), 7);
    assert.throws(
      () =>
        exitCodeFromStatus(status({ ...failure, details: { causes: [{ type: "ExitCode", message: "7" }] } })),
      ExecProtocolError,
    );
  });

  it("is a typed failure for any other Status, and a protocol error for what is not one", () => {
    assert.throws(
      () =>
        exitCodeFromStatus(
          status({
            status: "Failure",
            reason: "InternalError",
            code: 500,
            message: "pod x/y has no live VM",
          }),
        ),
      (err: unknown) => err instanceof ExecFailedError && err.reason === "InternalError" && err.code === 500,
    );
    assert.throws(() => exitCodeFromStatus(Buffer.from("not json")), ExecProtocolError);
  });
});

describe("BoundedCapture", () => {
  it("keeps the first bytes up to the bound and flags the rest", () => {
    const capture = new BoundedCapture(5);
    capture.write(Buffer.from("abc"));
    assert.equal(capture.truncated, false);
    capture.write(Buffer.from("defg"));
    capture.write(Buffer.from("h"));
    assert.equal(capture.bytes().toString(), "abcde");
    assert.equal(capture.truncated, true);
  });

  it("exactly the bound is not truncated", () => {
    const capture = new BoundedCapture(3);
    capture.write(Buffer.from("abc"));
    assert.equal(capture.truncated, false);
  });
});

describe("execQuery", () => {
  it("repeats command, names the container, and asks for stdin only when there is some", () => {
    const query = execQuery({ namespace: "n", pod: "p", container: "agent", command: ["sh", "-c", "a b"] });
    assert.deepEqual(query.getAll("command"), ["sh", "-c", "a b"]);
    assert.equal(query.get("container"), "agent");
    assert.equal(query.get("stdin"), "false");
    assert.equal(query.get("stdout"), "true");
    assert.equal(query.get("stderr"), "true");
    assert.equal(query.get("tty"), "false");
    assert.equal(
      execQuery({ namespace: "n", pod: "p", command: ["cat"], stdin: new Uint8Array() }).get("stdin"),
      "true",
    );
  });
});

describe("requireRunning", () => {
  const pod = (phase?: string) =>
    ({ metadata: { name: "p" }, spec: { containers: [] }, status: { phase } }) as Pod;
  it("lets a Running pod through and refuses any other phase", () => {
    requireRunning(pod("Running"), "n/p");
    for (const phase of ["Pending", "Succeeded", "Failed", undefined]) {
      assert.throws(() => requireRunning(pod(phase), "n/p"), ExecPodNotRunningError);
    }
  });
});
