// The held log (test/support/testlog.ts) keeps the report to the runner's lines: what the operator
// logs during a test is shown only if that test fails, as `go test` shows t.Log.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { TestLog } from "../support/testlog.ts";

const repoRoot = join(import.meta.dirname, "..", "..");

describe("the held log", () => {
  it("drops what it is given until it starts holding", () => {
    const held = new TestLog();
    held.write("before holding\n");
    held.startHolding();
    assert.equal(held.endTest(false), undefined);
  });

  it("drops a passing test's lines and shows a failing test's, each test's own", () => {
    const held = new TestLog();
    held.startHolding();
    held.write("first test\n");
    assert.equal(held.endTest(true), undefined);
    held.write('{"msg":"second test"}\n');
    held.write("[operator #2] second test\n");
    assert.equal(
      held.endTest(false),
      'log held while this test ran (2 lines):\n{"msg":"second test"}\n[operator #2] second test\n',
    );
    assert.equal(held.endTest(false), undefined, "a failing test with nothing held shows nothing");
  });

  it("at exit shows the lines no test took only if the file failed", () => {
    const held = new TestLog();
    held.startHolding();
    held.write("after hook\n");
    assert.equal(held.endFile(false), undefined);
    held.write("after hook\n");
    assert.equal(held.endFile(true), "log held since this file's last test ended (1 line):\nafter hook\n");
  });

  it("under test/run.ts's hooks: the operator's lines reach the report only with the failing test", () => {
    // With the NODE_TEST_CONTEXT node --test gave this process, the nested node --test would refuse
    // to run files, taking itself for a test file's process.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const run = spawnSync(
      process.execPath,
      [
        "--test",
        "--test-reporter=spec",
        "--import=./test/support/testlog-hooks.ts",
        "test/fixtures/testlog-file.ts",
      ],
      { cwd: repoRoot, env, encoding: "utf8", timeout: 60_000 },
    );
    const output = run.stdout + run.stderr;
    assert.equal(run.status, 1, output);
    assert.doesNotMatch(output, /line of the passing test/);
    const failing = /^✖ fails .*\nℹ log held while this test ran \(2 lines\):\n(.*)\n(.*)\n/m.exec(output);
    assert.ok(failing, output);
    assert.match(
      failing[1] ?? "",
      /^\{"level":"error",.*"stack":"Error: injected fault\\n.*"msg":"line of the failing test"\}$/,
    );
    assert.equal(failing[2], "[operator #1] child process line of the failing test");
    assert.match(
      output,
      /^log held since this file's last test ended \(1 line\):\n\{"level":"info",.*"msg":"line of the after hook"\}$/m,
    );
  });
});
