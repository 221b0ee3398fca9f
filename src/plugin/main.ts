// The kubectl-cocoon executable (bin/kubectl-cocoon runs this file). A client tool: the operator's
// entry point (src/main.ts) never imports anything under src/plugin/.

import { systemClock } from "../clock.ts";
import { runPlugin } from "./cli.ts";

process.exitCode = await runPlugin(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  now: () => systemClock.now(),
  sleep: (ms, signal) => systemClock.sleep(ms, signal),
});
