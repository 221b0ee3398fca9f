// The operator's command line and environment (docs/configuration.md), read the way the Go operator reads
// them: every flag's default comes from its environment variable, so a flag given on the command line
// overrides the variable; flags follow Go's `flag` package syntax. Pure: no I/O, no process access.

import { type LogThreshold, parseLogLevel } from "./log.ts";
import { DEFAULT_CHUNK_BYTES, MiB } from "./registry/upload.ts";

export interface Config {
  /** --metrics-bind-address / METRICS_ADDR; "0" switches the server off. */
  metricsAddr: string;
  /** --health-probe-bind-address / PROBE_ADDR; "0" switches the server off. */
  probeAddr: string;
  /** --leader-elect / LEADER_ELECT. */
  leaderElect: boolean;
  /** --cocoonset-concurrency / COCOONSET_CONCURRENCY; at least 1. */
  cocoonSetConcurrency: number;
  /** --hibernation-concurrency / HIBERNATION_CONCURRENCY; at least 1. */
  hibernationConcurrency: number;
  /** --copy-chunk-mib / COPY_CHUNK_MIB in bytes: the PATCH size of a streamed blob copy; 0 = one PUT per blob. */
  copyChunkBytes: number;
  /** --copy-concurrency / COPY_CONCURRENCY: a branch's VM copies in flight at once; at least 1. */
  copyConcurrency: number;
  /** --restore-concurrency / RESTORE_CONCURRENCY: CocoonRestores reconciled at once; at least 1. */
  restoreConcurrency: number;
  /** --guest-hooks / GUEST_HOOKS: false turns guest hooks off cluster-wide (docs/guest.md). */
  guestHooks: boolean;
  /** OCI_REGISTRY: the repository base snapshots live under; never empty. */
  registryBase: string;
  /** OPERATOR_LOG_LEVEL as the Go operator reads it (zerolog's names or numbers), as a log threshold (src/log.ts). */
  logLevel: LogThreshold;
  /** --kubeconfig (controller-runtime registers it in the Go binary); "" = KUBECONFIG, in-cluster, ~/.kube/config. */
  kubeconfig: string;
  /** --metrics-secure: /metrics over HTTPS, for callers the API server authenticates and authorizes. */
  metricsSecure: boolean;
  /** --metrics-cert-path/-name/-key: the serving certificate's files; undefined = self-signed. */
  metricsCert: { certFile: string; keyFile: string } | undefined;
}

export interface LoadedConfig {
  config: Config;
  /** Environment values that were ignored in favour of the default (the Go operator ignores them silently). */
  warnings: string[];
}

/**
 * Why the operator cannot start. exitCode follows the Go binary: 2 for a command-line error (with the
 * usage text), 0 for -h/--help (the usage text alone), 1 for a fatal configuration error. `plain`
 * errors go to stderr as text (the Go binary prints them before its logger exists); the others are
 * logged.
 */
export class ConfigError extends Error {
  readonly exitCode: 0 | 1 | 2;
  readonly plain: boolean;
  constructor(message: string, exitCode: 0 | 1 | 2, opts: { plain?: boolean } = {}) {
    super(message);
    this.name = "ConfigError";
    this.exitCode = exitCode;
    this.plain = opts.plain ?? exitCode !== 1;
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

export const PROGRAM = "cocoon-operator";
export const DEFAULT_METRICS_ADDR = ":8080";
export const DEFAULT_PROBE_ADDR = ":8081";
export const DEFAULT_CONCURRENCY = 4;
/** MiB per PATCH of a streamed blob copy. */
export const DEFAULT_COPY_CHUNK_MIB = DEFAULT_CHUNK_BYTES / MiB;
export const DEFAULT_COPY_CONCURRENCY = 4;
/** A chunk is one request body: 4 GiB is beyond what a registry or a front takes in one. */
const MAX_COPY_CHUNK_MIB = 4096;
/** Where every pod finds its own namespace (controller-runtime reads the same file). */
export const IN_CLUSTER_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

type FlagKind = "string" | "bool" | "int";

interface FlagDef {
  name: string;
  kind: FlagKind;
  env?: string;
  help: string;
}

const FLAGS: readonly FlagDef[] = [
  {
    name: "cocoonset-concurrency",
    kind: "int",
    env: "COCOONSET_CONCURRENCY",
    help: "Maximum concurrent CocoonSet reconciles.",
  },
  {
    name: "copy-chunk-mib",
    kind: "int",
    env: "COPY_CHUNK_MIB",
    help: "MiB per PATCH of a streamed blob copy; 0 sends each blob in one PUT.",
  },
  {
    name: "copy-concurrency",
    kind: "int",
    env: "COPY_CONCURRENCY",
    help: "VM snapshots a branch copies at once.",
  },
  {
    name: "guest-hooks",
    kind: "bool",
    env: "GUEST_HOOKS",
    help: "Run the hooks and refresh CocoonGuestPolicies ask for inside guests; false ignores every policy.",
  },
  {
    name: "health-probe-bind-address",
    kind: "string",
    env: "PROBE_ADDR",
    help: "The address the probe endpoint binds to.",
  },
  {
    name: "hibernation-concurrency",
    kind: "int",
    env: "HIBERNATION_CONCURRENCY",
    help: "Maximum concurrent CocoonHibernation reconciles.",
  },
  {
    name: "kubeconfig",
    kind: "string",
    help: "Paths to a kubeconfig. Only required if out-of-cluster.",
  },
  {
    name: "leader-elect",
    kind: "bool",
    env: "LEADER_ELECT",
    help: "Enable leader election so only one operator instance reconciles at a time.",
  },
  {
    name: "metrics-bind-address",
    kind: "string",
    env: "METRICS_ADDR",
    help: "The address the metric endpoint binds to.",
  },
  {
    name: "metrics-cert-key",
    kind: "string",
    help: "The name of the metrics server key file in --metrics-cert-path.",
  },
  {
    name: "metrics-cert-name",
    kind: "string",
    help: "The name of the metrics server certificate file in --metrics-cert-path.",
  },
  {
    name: "metrics-cert-path",
    kind: "string",
    help: "The directory that holds the metrics server certificate; without it a self-signed one is made.",
  },
  {
    name: "metrics-secure",
    kind: "bool",
    help: "Serve metrics over HTTPS to callers allowed get on the /metrics non-resource URL.",
  },
  {
    name: "restore-concurrency",
    kind: "int",
    env: "RESTORE_CONCURRENCY",
    help: "Maximum concurrent CocoonRestore reconciles (each copies one restore's snapshots).",
  },
];

/** strconv.ParseBool. */
export function parseGoBool(value: string): boolean | undefined {
  if (["1", "t", "T", "TRUE", "true", "True"].includes(value)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(value)) return false;
  return undefined;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function toInt64(value: bigint): number | "range" {
  return value < INT64_MIN || value > INT64_MAX ? "range" : Number(value);
}

/** strconv.Atoi on a 64-bit platform: optional sign, decimal digits, nothing else. */
export function parseGoAtoi(value: string): number | "syntax" | "range" {
  if (!/^[+-]?\d+$/.test(value)) return "syntax";
  return toInt64(BigInt(value.replace(/^\+/, "")));
}

/**
 * strconv.ParseInt(value, 0, 64), which Go's flag package uses for int flags: an optional sign, then a
 * 0x / 0o / 0b prefix, a leading 0 for octal, or decimal; underscores only between digits.
 */
export function parseGoFlagInt(value: string): number | "syntax" | "range" {
  const match = /^([+-]?)(0[xX]|0[oO]|0[bB]|0(?=.)|)(.+)$/.exec(value);
  if (!match) return "syntax";
  const [, sign = "", prefix = "", digits = ""] = match;
  const base = prefix === "" ? 10 : /[xX]/.test(prefix) ? 16 : /[bB]/.test(prefix) ? 2 : 8;
  const digit = { 2: "[01]", 8: "[0-7]", 10: "[0-9]", 16: "[0-9a-fA-F]" }[base];
  // A base prefix (0x, 0o, 0b, or the 0 of octal) may be followed by "_"; otherwise "_" sits between digits.
  const underscores = prefix !== "" ? `^_?${digit}+(_${digit}+)*$` : `^${digit}+(_${digit}+)*$`;
  if (!new RegExp(underscores).test(digits)) return "syntax";
  const clean = digits.replaceAll("_", "");
  const radixPrefix = base === 16 ? "0x" : base === 8 ? "0o" : base === 2 ? "0b" : "";
  const magnitude = BigInt(`${radixPrefix}${clean}`);
  return toInt64(sign === "-" ? -magnitude : magnitude);
}

interface Defaults {
  values: Map<string, string | boolean | number>;
  warnings: string[];
}

/** Each flag's default, taken from its environment variable the way the Go operator reads it. */
function defaultsFromEnv(env: Env): Defaults {
  const values = new Map<string, string | boolean | number>();
  const warnings: string[] = [];
  const ignored = (name: string, value: string, expected: string, fallback: unknown) =>
    warnings.push(`ignoring ${name}=${JSON.stringify(value)}: not ${expected}; using ${fallback}`);

  // EnvOrDefault: unset or empty → the default.
  values.set("metrics-bind-address", env.METRICS_ADDR || DEFAULT_METRICS_ADDR);
  values.set("health-probe-bind-address", env.PROBE_ADDR || DEFAULT_PROBE_ADDR);
  values.set("kubeconfig", "");
  values.set("metrics-secure", false);
  values.set("metrics-cert-path", "");
  values.set("metrics-cert-name", "tls.crt");
  values.set("metrics-cert-key", "tls.key");

  // EnvBool: strconv.ParseBool; anything it rejects (including unset) → true.
  const leader = env.LEADER_ELECT;
  const parsedLeader = leader === undefined ? undefined : parseGoBool(leader);
  if (leader !== undefined && leader !== "" && parsedLeader === undefined)
    ignored("LEADER_ELECT", leader, "a boolean", true);
  values.set("leader-elect", parsedLeader ?? true);

  // Guest hooks are on unless GUEST_HOOKS parses as false.
  const hooks = env.GUEST_HOOKS;
  const parsedHooks = hooks === undefined ? undefined : parseGoBool(hooks);
  if (hooks !== undefined && hooks !== "" && parsedHooks === undefined)
    ignored("GUEST_HOOKS", hooks, "a boolean", true);
  values.set("guest-hooks", parsedHooks ?? true);

  // strconv.Atoi; an error (including unset) → the default. Range is checked later, with the flag's value.
  for (const [flag, name, fallback] of [
    ["cocoonset-concurrency", "COCOONSET_CONCURRENCY", DEFAULT_CONCURRENCY],
    ["hibernation-concurrency", "HIBERNATION_CONCURRENCY", DEFAULT_CONCURRENCY],
    ["copy-chunk-mib", "COPY_CHUNK_MIB", DEFAULT_COPY_CHUNK_MIB],
    ["copy-concurrency", "COPY_CONCURRENCY", DEFAULT_COPY_CONCURRENCY],
    ["restore-concurrency", "RESTORE_CONCURRENCY", DEFAULT_CONCURRENCY],
  ] as const) {
    const raw = env[name];
    const parsed = raw === undefined ? "syntax" : parseGoAtoi(raw);
    if (raw !== undefined && raw !== "" && typeof parsed !== "number") {
      ignored(name, raw, "an integer", fallback);
    }
    values.set(flag, typeof parsed === "number" ? parsed : fallback);
  }
  return { values, warnings };
}

/** Go's PrintDefaults layout; the defaults shown are the effective ones (environment included). */
export function usage(env: Env = {}): string {
  const { values } = defaultsFromEnv(env);
  const lines = [`Usage of ${PROGRAM}:`];
  for (const flag of FLAGS) {
    const type = flag.kind === "bool" ? "" : ` ${flag.kind === "int" ? "int" : "string"}`;
    lines.push(`  -${flag.name}${type}`);
    const value = values.get(flag.name);
    let help = flag.help;
    if (flag.env) help += ` (env ${flag.env})`;
    if (value !== "" && value !== false) {
      help += flag.kind === "string" ? ` (default ${JSON.stringify(value)})` : ` (default ${value})`;
    }
    lines.push(`    \t${help}`);
  }
  lines.push(
    "Environment:",
    "  OCI_REGISTRY        registry base for snapshots (required), e.g. REGION-docker.pkg.dev/PROJECT/REPO",
    "  OPERATOR_LOG_LEVEL  trace | debug | info | warn | error | fatal | panic | disabled, or -128..127 (default info)",
    "  POD_NAMESPACE       leader-election namespace when not running in a pod",
  );
  return `${lines.join("\n")}\n`;
}

function usageError(message: string, env: Env): ConfigError {
  return new ConfigError(`${message}\n${usage(env)}`, 2);
}

/**
 * Parses argv the way Go's flag package does: "-name" or "--name", "=value" or (not for booleans) the
 * next argument; parsing stops at "--" or the first non-flag argument, and what follows is ignored.
 */
function parseFlags(argv: readonly string[], env: Env, values: Map<string, string | boolean | number>): void {
  const args = [...argv];
  while (args.length > 0) {
    const arg = args[0] ?? "";
    if (arg.length < 2 || !arg.startsWith("-")) return;
    args.shift();
    let body = arg.slice(1);
    if (body.startsWith("-")) {
      body = body.slice(1);
      if (body === "") return;
    }
    if (body === "" || body.startsWith("-") || body.startsWith("=")) {
      throw usageError(`bad flag syntax: ${arg}`, env);
    }
    const eq = body.indexOf("=");
    const name = eq < 0 ? body : body.slice(0, eq);
    let value = eq < 0 ? undefined : body.slice(eq + 1);
    const flag = FLAGS.find((f) => f.name === name);
    if (!flag) {
      if (name === "help" || name === "h") throw new ConfigError(usage(env), 0);
      throw usageError(`flag provided but not defined: -${name}`, env);
    }
    if (flag.kind === "bool") {
      const parsed = value === undefined ? true : parseGoBool(value);
      if (parsed === undefined) {
        throw usageError(`invalid boolean value ${JSON.stringify(value)} for -${name}: parse error`, env);
      }
      values.set(name, parsed);
      continue;
    }
    if (value === undefined) {
      if (args.length === 0) throw usageError(`flag needs an argument: -${name}`, env);
      value = args.shift() ?? "";
    }
    if (flag.kind === "string") {
      values.set(name, value);
      continue;
    }
    const parsed = parseGoFlagInt(value);
    if (typeof parsed !== "number") {
      const why = parsed === "range" ? "value out of range" : "parse error";
      throw usageError(`invalid value ${JSON.stringify(value)} for flag -${name}: ${why}`, env);
    }
    values.set(name, parsed);
  }
}

/** Reads the command line (without the program name) and the environment into the operator's config. */
export function loadConfig(argv: readonly string[], env: Env): LoadedConfig {
  const { values, warnings } = defaultsFromEnv(env);
  parseFlags(argv, env, values);

  // The Go binary sets up its logger right after the flags, so a bad level fails before OCI_REGISTRY.
  const logLevel = parseLogLevel(env.OPERATOR_LOG_LEVEL);
  if (logLevel instanceof Error) {
    throw new ConfigError(`setup log: setup log: ${logLevel.message}`, 1, { plain: true });
  }

  const registryBase = env.OCI_REGISTRY ?? "";
  if (registryBase === "") throw new ConfigError("OCI_REGISTRY must be set", 1);

  const concurrency = (flag: string, what: string): number => {
    const n = values.get(flag) as number;
    if (n < 1) throw new ConfigError(`${what} concurrency must be at least 1, got ${n}`, 1);
    return n;
  };

  const copyChunkMiB = values.get("copy-chunk-mib") as number;
  if (copyChunkMiB < 0 || copyChunkMiB > MAX_COPY_CHUNK_MIB) {
    throw new ConfigError(
      `copy chunk must be 0 (one PUT per blob) to ${MAX_COPY_CHUNK_MIB} MiB, got ${copyChunkMiB}`,
      1,
    );
  }

  const metricsSecure = values.get("metrics-secure") as boolean;
  const certDir = values.get("metrics-cert-path") as string;
  if (certDir !== "" && !metricsSecure) {
    throw new ConfigError("--metrics-cert-path needs --metrics-secure: plain HTTP serves no certificate", 1);
  }
  const metricsCert =
    certDir === ""
      ? undefined
      : {
          certFile: `${certDir.replace(/\/+$/, "")}/${values.get("metrics-cert-name")}`,
          keyFile: `${certDir.replace(/\/+$/, "")}/${values.get("metrics-cert-key")}`,
        };

  return {
    config: {
      metricsAddr: values.get("metrics-bind-address") as string,
      probeAddr: values.get("health-probe-bind-address") as string,
      leaderElect: values.get("leader-elect") as boolean,
      cocoonSetConcurrency: concurrency("cocoonset-concurrency", "cocoonset"),
      hibernationConcurrency: concurrency("hibernation-concurrency", "hibernation"),
      copyChunkBytes: copyChunkMiB * 1024 * 1024,
      copyConcurrency: concurrency("copy-concurrency", "copy"),
      restoreConcurrency: concurrency("restore-concurrency", "restore"),
      guestHooks: values.get("guest-hooks") as boolean,
      registryBase,
      logLevel,
      kubeconfig: values.get("kubeconfig") as string,
      metricsSecure,
      metricsCert,
    },
    warnings,
  };
}

/**
 * The namespace of the leader-election Lease: the pod's own namespace (from its service-account
 * mount, as controller-runtime does), else POD_NAMESPACE. controller-runtime refuses to start out of
 * cluster without an explicit namespace; POD_NAMESPACE is that explicit namespace here.
 */
export function leaderElectionNamespace(inClusterNamespace: string | undefined, env: Env): string {
  const fromFile = inClusterNamespace?.trim();
  if (fromFile) return fromFile;
  const fromEnv = env.POD_NAMESPACE?.trim();
  if (fromEnv) return fromEnv;
  throw new ConfigError(
    "unable to find leader election namespace: not running in-cluster; set POD_NAMESPACE " +
      "(e.g. POD_NAMESPACE=cocoon-system) or pass --leader-elect=false",
    1,
  );
}
