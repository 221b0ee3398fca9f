// Turns on the held log (test/support/testlog.ts) in a test file's process: test/run.ts loads this
// module into every test file's process with node --test's --import. The operator's process logger
// writes into the held log instead of stdout; after each test, a failed test's held lines are attached
// to its report as a diagnostic; when the process exits after a failure, the lines no test took go to
// stderr.
import { afterEach, type TestContext } from "node:test";
import { redirectProcessLog } from "../../src/log.ts";
import { testLog } from "./testlog.ts";

testLog.startHolding();
redirectProcessLog(testLog);

/** afterEach's context: the test that ended. Node documents `passed`; @types/node does not declare it. */
type EndedTest = TestContext & { readonly passed: boolean };

afterEach((context) => {
  const t = context as EndedTest;
  const shown = testLog.endTest(t.passed);
  if (shown !== undefined) t.diagnostic(shown);
});

process.on("exit", (code) => {
  const shown = testLog.endFile(code !== 0);
  if (shown !== undefined) process.stderr.write(shown);
});
