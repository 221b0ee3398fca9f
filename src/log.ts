// One JSON logger for the whole operator. Every line names its level twice: `level` ("info", the
// name most pipelines map) and `severity` ("INFO", the field GKE / Cloud Logging reads). The
// threshold comes from OPERATOR_LOG_LEVEL, parsed as the Go operator parses it (zerolog.ParseLevel
// of the lowercased value, default info). Lines have pino's shape (level, time, bindings, fields,
// msg; an `err` field as pino's serializer writes it), written by this module: pino's transport
// support loads worker_threads and thread-stream, ~5 MiB resident for a feature the operator does not
// use (BENCHMARKS.md, benchmark 4).

/** Log calls: fields then a message, or a message alone. */
export interface LogFn {
  (fields: object, msg?: string): void;
  (msg: string): void;
}

export interface Logger {
  /** The threshold (a LogThreshold); a child follows its parent's unless its own is set. */
  level: string;
  trace: LogFn;
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  fatal: LogFn;
  /** A logger whose lines carry `bindings` too. */
  child(bindings: Record<string, unknown>): Logger;
}

/** Where lines go: stdout, or a test's stream. */
export interface LogDestination {
  write(line: string): unknown;
}

/** The thresholds, least severe first; "silent" logs nothing. */
export type LogThreshold = "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "silent";

/** zerolog's levels by number (trace -1 … panic 5, no-level 6, disabled 7), as thresholds. */
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

/** Cloud Logging's LogSeverity for each level. */
const SEVERITY: Readonly<Record<string, string>> = {
  trace: "DEBUG",
  debug: "DEBUG",
  info: "INFO",
  warn: "WARNING",
  error: "ERROR",
  fatal: "CRITICAL",
};

const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const;
type Level = (typeof LEVELS)[number];

/** pino's numbers: a line is written when its level's is at least the threshold's. */
const RANK: Readonly<Record<string, number>> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Number.POSITIVE_INFINITY,
};

function rankOf(threshold: string): number {
  const rank = RANK[threshold];
  if (rank === undefined) throw new Error(`unknown log level "${threshold}"`);
  return rank;
}

/** The err field as pino-std-serializers writes it: type, messages and stacks with their causes, own fields. */
function serializeError(err: Error, seen: Set<Error>): Record<string, unknown> {
  seen.add(err);
  const out: Record<string, unknown> = {
    type: typeof err.constructor === "function" ? err.constructor.name : err.name,
    message: withCauses(err, (e) => e.message, ": "),
    stack: withCauses(err, (e) => e.stack ?? "", "\ncaused by: "),
  };
  if (Array.isArray((err as Partial<AggregateError>).errors)) {
    out.aggregateErrors = (err as AggregateError).errors.map((e: unknown) =>
      e instanceof Error ? serializeError(e, new Set()) : e,
    );
  }
  for (const key in err) {
    if (out[key] !== undefined) continue;
    const value = (err as unknown as Record<string, unknown>)[key];
    if (!(value instanceof Error)) out[key] = value;
    else if (key !== "cause" && !seen.has(value)) out[key] = serializeError(value, seen);
  }
  return out;
}

/** `part` of err and of each Error in its cause chain, joined. */
function withCauses(err: Error, part: (e: Error) => string, separator: string): string {
  const parts: string[] = [];
  const seen = new Set<Error>();
  for (let e: unknown = err; e instanceof Error && !seen.has(e); e = e.cause) {
    seen.add(e);
    parts.push(part(e));
  }
  return parts.join(separator);
}

/** JSON.stringify that writes a repeated (circular) object as "[Circular]" instead of throwing. */
function stringify(line: Record<string, unknown>): string {
  try {
    return JSON.stringify(line);
  } catch {
    const open: object[] = [];
    return JSON.stringify(line, function (this: unknown, _key, value: unknown) {
      if (typeof value === "bigint") return value.toString();
      if (typeof value !== "object" || value === null) return value;
      while (open.length > 0 && open.at(-1) !== this) open.pop();
      if (open.includes(value)) return "[Circular]";
      open.push(value);
      return value;
    });
  }
}

class JsonLogger implements Logger {
  readonly #destination: LogDestination;
  readonly #bindings: Record<string, unknown>;
  readonly #parent: JsonLogger | undefined;
  #level: string | undefined;

  constructor(
    destination: LogDestination,
    bindings: Record<string, unknown>,
    parent?: JsonLogger,
    level?: string,
  ) {
    this.#destination = destination;
    this.#bindings = bindings;
    this.#parent = parent;
    this.#level = level;
  }

  get level(): string {
    return this.#level ?? this.#parent?.level ?? "info";
  }

  set level(threshold: string) {
    rankOf(threshold);
    this.#level = threshold;
  }

  readonly trace: LogFn = (a: object | string, msg?: string) => this.#write("trace", a, msg);
  readonly debug: LogFn = (a: object | string, msg?: string) => this.#write("debug", a, msg);
  readonly info: LogFn = (a: object | string, msg?: string) => this.#write("info", a, msg);
  readonly warn: LogFn = (a: object | string, msg?: string) => this.#write("warn", a, msg);
  readonly error: LogFn = (a: object | string, msg?: string) => this.#write("error", a, msg);
  readonly fatal: LogFn = (a: object | string, msg?: string) => this.#write("fatal", a, msg);

  child(bindings: Record<string, unknown>): Logger {
    return new JsonLogger(this.#destination, { ...this.#bindings, ...bindings }, this);
  }

  #write(level: Level, fieldsOrMsg: object | string, msg?: string): void {
    if ((RANK[level] as number) < rankOf(this.level)) return;
    // An Error as the fields is logged as pino logs it: under `err`.
    const fields =
      typeof fieldsOrMsg === "string"
        ? {}
        : fieldsOrMsg instanceof Error
          ? { err: fieldsOrMsg }
          : fieldsOrMsg;
    const message = typeof fieldsOrMsg === "string" ? fieldsOrMsg : msg;
    const line: Record<string, unknown> = {
      level,
      severity: SEVERITY[level],
      time: new Date().toISOString(),
      ...this.#bindings,
      ...fields,
    };
    const err = (fields as { err?: unknown }).err;
    if (err instanceof Error) line.err = serializeError(err, new Set());
    if (message !== undefined) line.msg = message;
    this.#destination.write(`${stringify(line)}\n`);
  }
}

/** The process logger; main.ts applies the validated OPERATOR_LOG_LEVEL before anything logs. */
export function createLogger(destination: LogDestination = process.stdout): Logger {
  const parsed = parseLogLevel(process.env.OPERATOR_LOG_LEVEL);
  return new JsonLogger(
    destination,
    { component: "cocoon-operator" },
    undefined,
    parsed instanceof Error ? "info" : parsed,
  );
}

/** Where `log` writes; only redirectProcessLog changes it. */
let processLogDestination: LogDestination = process.stdout;

/**
 * Sends the lines of `log` and of its children to `destination` instead of stdout. The operator
 * never calls it: it is for a test process that runs the operator in-process and holds each test's
 * lines, to show them only when that test fails.
 */
export function redirectProcessLog(destination: LogDestination): void {
  processLogDestination = destination;
}

export const log: Logger = createLogger({ write: (line) => processLogDestination.write(line) });
