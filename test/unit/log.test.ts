// Log lines carry a level name pipelines map (`level`) and the `severity` Cloud Logging reads; the
// process refuses an OPERATOR_LOG_LEVEL the Go operator refuses, with its exit code and message.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { Writable } from "node:stream";
import { describe, it } from "node:test";
import { createLogger } from "../../src/log.ts";

const main = join(import.meta.dirname, "..", "..", "src", "main.ts");

function capture(): { stream: Writable; lines: () => Record<string, unknown>[] } {
  let text = "";
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  const lines = () =>
    text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { stream, lines };
}

describe("log lines", () => {
  it("name the level and the Cloud Logging severity", () => {
    const { stream, lines } = capture();
    const logger = createLogger(stream);
    logger.level = "trace";
    logger.trace("t");
    logger.debug("d");
    logger.info("i");
    logger.warn("w");
    logger.error("e");
    logger.fatal("f");
    assert.deepEqual(
      lines().map((l) => [l.msg, l.level, l.severity]),
      [
        ["t", "trace", "DEBUG"],
        ["d", "debug", "DEBUG"],
        ["i", "info", "INFO"],
        ["w", "warn", "WARNING"],
        ["e", "error", "ERROR"],
        ["f", "fatal", "CRITICAL"],
      ],
    );
    for (const line of lines()) assert.match(String(line.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it("hold level, time, the component and a child's bindings, then the fields, then msg, in pino's order", () => {
    const { stream, lines } = capture();
    createLogger(stream)
      .child({ controller: "cocoonset" })
      .child({ cocoonset: "ns/a" })
      .info({ slot: 2 }, "m");
    const [line] = lines();
    assert.deepEqual(Object.keys(line ?? {}), [
      "level",
      "severity",
      "time",
      "component",
      "controller",
      "cocoonset",
      "slot",
      "msg",
    ]);
    assert.deepEqual(
      { ...line, time: undefined },
      {
        level: "info",
        severity: "INFO",
        time: undefined,
        component: "cocoon-operator",
        controller: "cocoonset",
        cocoonset: "ns/a",
        slot: 2,
        msg: "m",
      },
    );
  });

  it("write an err as pino's serializer does: type, message and stack with their causes, own fields", () => {
    const { stream, lines } = capture();
    const cause = new Error("connection refused");
    const err = Object.assign(new TypeError("probe failed", { cause }), { code: "ECONNREFUSED" });
    const logger = createLogger(stream);
    logger.error({ err }, "fields");
    logger.error(err, "an Error as the fields");
    for (const line of lines()) {
      assert.deepEqual(line.err, {
        type: "TypeError",
        message: "probe failed: connection refused",
        stack: `${err.stack}\ncaused by: ${cause.stack}`,
        code: "ECONNREFUSED",
      });
    }
    assert.equal(lines().length, 2);
  });

  it("drop lines below the threshold, which children follow unless they set their own; silent drops all", () => {
    const { stream, lines } = capture();
    const logger = createLogger(stream);
    const child = logger.child({ controller: "c" });
    logger.level = "warn";
    child.info("dropped");
    child.warn("kept");
    child.level = "debug";
    child.debug("kept by the child's own");
    logger.debug("dropped by the parent's");
    logger.level = "silent";
    logger.fatal("dropped");
    assert.deepEqual(
      lines().map((l) => l.msg),
      ["kept", "kept by the child's own"],
    );
  });
});

describe("the operator process and OPERATOR_LOG_LEVEL", () => {
  const run = (env: Record<string, string>) =>
    spawnSync(process.execPath, [main], {
      env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent", ...env },
      encoding: "utf8",
      timeout: 30_000,
    });

  it("an unknown level exits 1 with Go's message on stderr", () => {
    const result = run({ OPERATOR_LOG_LEVEL: "verbose", OCI_REGISTRY: "registry.example/snapshots" });
    assert.equal(result.status, 1);
    assert.equal(
      result.stderr,
      "setup log: setup log: Unknown Level String: 'verbose', defaulting to NoLevel\n",
    );
    assert.equal(result.stdout, "");
  });

  it("a fatal start logs one JSON line with level and severity", () => {
    const result = run({ OPERATOR_LOG_LEVEL: "WARN" });
    assert.equal(result.status, 1);
    const line = JSON.parse(result.stdout.trim()) as Record<string, unknown>;
    assert.equal(line.msg, "OCI_REGISTRY must be set");
    assert.equal(line.level, "fatal");
    assert.equal(line.severity, "CRITICAL");
  });
});
