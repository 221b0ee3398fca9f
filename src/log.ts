// One JSON logger for the whole operator. Every line names its level twice: `level` ("info", the
// name most pipelines map) and `severity` ("INFO", the field GKE / Cloud Logging reads). The
// threshold comes from OPERATOR_LOG_LEVEL, parsed as the Go operator parses it (zerolog.ParseLevel
// of the lowercased value, default info).
import { pino } from "pino";

export type Logger = pino.Logger;

/** pino's thresholds; "silent" logs nothing. */
export type LogThreshold = "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "silent";

/** zerolog's levels by number (trace -1 … panic 5, no-level 6, disabled 7), as pino thresholds. */
function thresholdOfZerologLevel(level: number): LogThreshold {
  if (level <= -1) return "trace";
  // panic (5) and above let through only panics, which this operator never logs.
  return (["debug", "info", "warn", "error", "fatal"] as const)[level] ?? "silent";
}

const ZEROLOG_NAMES: Readonly<Record<string, number>> = {
  trace: -1,
  debug: 0,
  info: 1,
  warn: 2,
  error: 3,
  fatal: 4,
  panic: 5,
  disabled: 7,
};

/**
 * OPERATOR_LOG_LEVEL → threshold, or the Go operator's error text. Accepted: unset or empty (info),
 * the zerolog names in any case, and integers from -128 to 127 (strconv.Atoi syntax).
 */
export function parseLogLevel(value: string | undefined): LogThreshold | Error {
  const raw = value || "info";
  const named = ZEROLOG_NAMES[raw.toLowerCase()];
  if (named !== undefined) return thresholdOfZerologLevel(named);
  const n = /^[+-]?\d+$/.test(raw) ? BigInt(raw.replace(/^\+/, "")) : undefined;
  // strconv.Atoi fails outside int64, and zerolog then reports the string as unknown.
  if (n === undefined || n < -(2n ** 63n) || n >= 2n ** 63n) {
    return new Error(`Unknown Level String: '${raw.toLowerCase()}', defaulting to NoLevel`);
  }
  if (n > 127n || n < -128n) return new Error(`Out-Of-Bounds Level: '${n}', defaulting to NoLevel`);
  return thresholdOfZerologLevel(Number(n));
}

/** Cloud Logging's LogSeverity for each pino level. */
const SEVERITY: Readonly<Record<string, string>> = {
  trace: "DEBUG",
  debug: "DEBUG",
  info: "INFO",
  warn: "WARNING",
  error: "ERROR",
  fatal: "CRITICAL",
};

function levelFields(label: string): { level: string; severity: string } {
  return { level: label, severity: SEVERITY[label] ?? "DEFAULT" };
}

/** The process logger; main.ts applies the validated OPERATOR_LOG_LEVEL before anything logs. */
export function createLogger(destination?: pino.DestinationStream): Logger {
  const parsed = parseLogLevel(process.env.OPERATOR_LOG_LEVEL);
  return pino(
    {
      level: parsed instanceof Error ? "info" : parsed,
      base: { component: "cocoon-operator" },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: levelFields },
    },
    destination,
  );
}

export const log: Logger = createLogger();
