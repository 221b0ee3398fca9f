import { createLogger, type Logger } from "../../src/log.ts";

/** The operator's own logger with every line held back: for tests and benchmarks that wire deps by hand. */
export function silentLogger(): Logger {
  const log = createLogger();
  log.level = "silent";
  return log;
}
