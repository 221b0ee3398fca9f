// `kubectl cocoon`: finds the command in the table, parses its flags with the global ones, checks
// its arguments, and runs it against the cluster the kubeconfig rules pick. Every error ends here as
// one line on stderr and an exit code (errors.ts); nothing reaches the user as a stack trace.

import { ApiError } from "../controller/errors.ts";
import { createRegistryClient, type RegistryClient, RegistryError } from "../registry/index.ts";
import { type Connection, connect, loadKubeconfig } from "../sdk/connect.ts";
import type { Command, CommandContext } from "./command.ts";
import { COMMANDS } from "./commands/index.ts";
import { COMPLETION_SHELLS, complete, completionScript } from "./completion.ts";
import { dryRunClient, parseDryRun } from "./dryrun.ts";
import { EXIT_ERROR, EXIT_OK, PluginError, pluginError, UsageError } from "./errors.ts";
import {
  booleanFlag,
  type FlagSpec,
  type ParsedArgs,
  parseArgs,
  positionalIndices,
  positionalWords,
  stringFlag,
} from "./flags.ts";
import { operatorRegistry } from "./operatorconfig.ts";
import { parseOutputFormat } from "./output.ts";

export interface PluginIO {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
  now(): number;
  /** Resolves after ms, or rejects once the signal aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const GLOBAL_FLAGS: readonly FlagSpec[] = [
  {
    name: "namespace",
    short: "n",
    kind: "string",
    value: "NAME",
    help: 'namespace (default: the context\'s, else "default")',
    complete: "namespaces",
  },
  {
    name: "context",
    kind: "string",
    value: "NAME",
    help: "kubeconfig context (default: the current context)",
    complete: "contexts",
  },
  {
    name: "kubeconfig",
    kind: "string",
    value: "FILE",
    help: "kubeconfig file (default: KUBECONFIG, else ~/.kube/config, else in-cluster)",
    complete: "files",
  },
  {
    name: "output",
    short: "o",
    kind: "string",
    value: "FORMAT",
    help: "wide, json or yaml; name where a command says so",
    complete: "outputs",
  },
  {
    name: "registry",
    kind: "string",
    value: "HOST[/PATH]",
    help: "the operator's snapshot registry (default: OCI_REGISTRY, else the operator's own, from its Deployment in cocoon-system)",
  },
  { name: "help", short: "h", kind: "boolean", help: "show help" },
];

const BUILTINS = ["completion", "help"];

export async function runPlugin(argv: readonly string[], io: PluginIO): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (err) {
    io.stderr(`${describeError(err)}\n`);
    return err instanceof PluginError ? err.exitCode : EXIT_ERROR;
  }
}

function describeError(err: unknown): string {
  if (err instanceof UsageError) return `error: ${err.message}\nrun 'kubectl cocoon --help' for usage`;
  if (err instanceof PluginError) return `error: ${err.message}`;
  if (err instanceof ApiError) return `Error from server (${err.reason || err.status}): ${err.message}`;
  if (err instanceof RegistryError) return `error: registry: ${err.message}`;
  const cause = (err as { cause?: { code?: string } }).cause?.code;
  return `error: ${(err as Error).message ?? String(err)}${cause ? ` (${cause})` : ""}`;
}

async function dispatch(argv: readonly string[], io: PluginIO): Promise<number> {
  if (argv[0] === "__complete") {
    const words = argv.slice(1);
    const globals = parseArgs(withoutPartial(words), GLOBAL_FLAGS, true);
    const sources = {
      context: () => commandContext(globals, io),
      contexts: () => [...(loadKubeconfig(connectionFlags(globals), io.env)?.contexts.keys() ?? [])],
    };
    io.stdout(`${await complete(words.length ? words : [""], COMMANDS, GLOBAL_FLAGS, BUILTINS, sources)}\n`);
    return EXIT_OK;
  }
  const nameAt = positionalIndices(argv, GLOBAL_FLAGS)[0];
  const name = nameAt === undefined ? undefined : argv[nameAt];
  if (name === undefined || name === "help") {
    const topic = name === "help" ? positionalWords(argv, GLOBAL_FLAGS)[1] : undefined;
    const command = topic === undefined ? undefined : findCommand(topic);
    io.stdout(`${command ? commandHelp(command) : pluginHelp()}\n`);
    return EXIT_OK;
  }
  const rest = argv.filter((_, i) => i !== nameAt);
  if (name === "completion") {
    const args = parseArgs(rest, GLOBAL_FLAGS);
    const shell = args.positionals[0];
    if (!shell || !(COMPLETION_SHELLS as readonly string[]).includes(shell)) {
      throw new UsageError(`completion needs a shell: ${COMPLETION_SHELLS.join(" or ")}`);
    }
    io.stdout(completionScript(shell as (typeof COMPLETION_SHELLS)[number]));
    return EXIT_OK;
  }
  const command = findCommand(name);
  const args = parseArgs(rest, [...GLOBAL_FLAGS, ...command.flags]);
  if (booleanFlag(args, "help")) {
    io.stdout(`${commandHelp(command)}\n`);
    return EXIT_OK;
  }
  checkPositionals(command, args);
  await command.run(commandContext(args, io), args);
  return EXIT_OK;
}

/** Words before the one being completed, so a half-typed flag does not fail the parse. */
function withoutPartial(words: readonly string[]): string[] {
  return words.slice(0, -1);
}

function findCommand(name: string): Command {
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) throw new UsageError(`unknown command "${name}" for "kubectl cocoon"`);
  return command;
}

function checkPositionals(command: Command, args: ParsedArgs): void {
  const want = command.positionals;
  const got = args.positionals;
  const required = want.filter((p) => !p.optional).length;
  if (got.length < required) {
    const missing = want
      .slice(got.length, required)
      .map((p) => p.name)
      .join(" ");
    throw new UsageError(`${command.name} needs ${missing}: kubectl cocoon ${usageLine(command)}`);
  }
  if (got.length > want.length) {
    throw new UsageError(`too many arguments for ${command.name}: ${got.slice(want.length).join(" ")}`);
  }
  for (const [i, value] of got.entries()) {
    if (value === "") throw new UsageError(`${want[i]?.name ?? "argument"} must not be empty`);
  }
}

function connectionFlags(args: ParsedArgs) {
  return {
    kubeconfig: stringFlag(args, "kubeconfig"),
    context: stringFlag(args, "context"),
    namespace: stringFlag(args, "namespace"),
  };
}

/** The context a command runs with; the cluster connection is made on first use. */
function commandContext(args: ParsedArgs, io: PluginIO): CommandContext {
  const output = parseOutputFormat(stringFlag(args, "output"));
  let connection: Connection | undefined;
  const connected = () => {
    connection ??= connectPlugin(connectionFlags(args), io.env);
    return connection;
  };
  const dryRun = parseDryRun(stringFlag(args, "dry-run"));
  let registry: Promise<RegistryClient | undefined> | undefined;
  const ctx: CommandContext = {
    get client() {
      return dryRunClient(connected().client, dryRun);
    },
    get namespace() {
      return connected().namespace;
    },
    output,
    dryRun,
    out: (text) => io.stdout(`${text}\n`),
    info: (text) => io.stderr(`${text}\n`),
    now: io.now,
    serverNow: () => connection?.client.serverDateMs() ?? io.now(),
    sleep: io.sleep,
    get watcher() {
      return connected().client;
    },
    registry() {
      registry ??= findRegistry(ctx, stringFlag(args, "registry"), io);
      return registry;
    },
  };
  return ctx;
}

/**
 * Where the registry comes from: --registry, else OCI_REGISTRY (both the user's explicit choice), else
 * the operator's own configuration in the cluster, read only when neither is set.
 */
export async function registryBase(
  flag: string | undefined,
  envValue: string | undefined,
  installed: () => Promise<{ base?: string | undefined; from?: string }>,
): Promise<{ base: string; from: string } | undefined> {
  if (flag) return { base: flag, from: "--registry" };
  if (envValue) return { base: envValue, from: "OCI_REGISTRY" };
  const found = await installed();
  return found.base === undefined
    ? undefined
    : { base: found.base, from: found.from ?? "the operator's Deployment" };
}

async function findRegistry(
  ctx: CommandContext,
  flag: string | undefined,
  io: PluginIO,
): Promise<RegistryClient | undefined> {
  const chosen = await registryBase(flag, io.env.OCI_REGISTRY, () => operatorRegistry(ctx));
  if (!chosen) return undefined;
  try {
    return createRegistryClient(chosen.base, {
      logger: { warn: (_, msg) => io.stderr(`warning: ${msg}\n`) },
    });
  } catch (err) {
    throw new PluginError(`registry ${chosen.base} (from ${chosen.from}): ${(err as Error).message}`);
  }
}

function usageLine(command: Command): string {
  const positionals = command.positionals.map((p) => (p.optional ? `[${p.name}]` : p.name)).join(" ");
  const flags = command.flags.map((f) =>
    f.kind === "optional"
      ? `[--${f.name}[=${f.value}]]`
      : f.kind === "boolean"
        ? `[--${f.name}]`
        : f.required
          ? `--${f.name} ${f.value}`
          : `[--${f.name} ${f.value}]`,
  );
  return [command.name, positionals, ...flags].filter((p) => p !== "").join(" ");
}

function flagLines(flags: readonly FlagSpec[]): string[] {
  const left = flags.map((f) => {
    const names = f.short ? `-${f.short}, --${f.name}` : `    --${f.name}`;
    const value = f.kind === "string" ? ` ${f.value}` : f.kind === "optional" ? `[=${f.value}]` : "";
    return `  ${names}${value}`;
  });
  const width = Math.max(...left.map((l) => l.length)) + 2;
  return flags.map((f, i) => `${(left[i] ?? "").padEnd(width)}${f.help}`);
}

const EXIT_CODES = [
  "Exit codes:",
  "  0  done",
  "  1  refused or failed: unknown object, bad input, API or registry error",
  "  2  bad command line",
  "  3  --wait: the operator reported failure (its reason is printed)",
  "  4  --wait: timed out (the operator's latest warning is printed)",
];

function pluginHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length), ...BUILTINS.map((b) => b.length)) + 2;
  return [
    "kubectl cocoon: agent groups (CocoonSets) and their VMs, from the command line.",
    "",
    "Usage:",
    "  kubectl cocoon COMMAND [ARGS] [flags]",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    `  ${"completion".padEnd(width)}Print a shell completion script (bash or zsh)`,
    `  ${"help".padEnd(width)}Help for a command`,
    "",
    "Global flags:",
    ...flagLines(GLOBAL_FLAGS),
    "",
    ...EXIT_CODES,
    "",
    "Run 'kubectl cocoon COMMAND --help' for a command's flags and examples.",
  ].join("\n");
}

function commandHelp(command: Command): string {
  return [
    command.summary,
    "",
    command.description,
    "",
    "Usage:",
    `  kubectl cocoon ${usageLine(command)} [global flags]`,
    ...(command.flags.length > 0 ? ["", "Flags:", ...flagLines(command.flags)] : []),
    "",
    "Examples:",
    ...command.examples.map((e) => `  kubectl cocoon ${e}`),
    "",
    "Global flags:",
    ...flagLines(GLOBAL_FLAGS),
    "",
    ...EXIT_CODES,
  ].join("\n");
}

/** The SDK's connection, its configuration errors as the plugin's. */
function connectPlugin(flags: ReturnType<typeof connectionFlags>, env: PluginIO["env"]): Connection {
  try {
    return connect(flags, env, "kubectl-cocoon");
  } catch (err) {
    throw pluginError(err);
  }
}
