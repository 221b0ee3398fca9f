// What a command is (one entry of the table in commands/index.ts) and what it is given to run.

import type { Client, WatchClient } from "../controller/client.ts";
import type { RegistryClient } from "../registry/index.ts";
import type { DryRun } from "./dryrun.ts";
import { pluginError } from "./errors.ts";
import type { CompletionKind, FlagSpec, ParsedArgs } from "./flags.ts";
import type { OutputFormat } from "./output.ts";

export interface PositionalSpec {
  /** As written in usage, e.g. SET. */
  name: string;
  complete?: CompletionKind;
  /** May be left out (usage shows it bracketed); the command says what stands in for it. */
  optional?: boolean;
}

export interface Command {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** Longer help, printed by `kubectl cocoon COMMAND --help`. */
  description: string;
  positionals: readonly PositionalSpec[];
  /** The command's own flags (global flags are added by the CLI). */
  flags: readonly FlagSpec[];
  /** Examples shown in help, without the leading "kubectl cocoon". */
  examples: readonly string[];
  run(ctx: CommandContext, args: ParsedArgs): Promise<void>;
}

export interface Output {
  /** Results: tables and -o json|yaml documents. */
  out(text: string): void;
  /** Progress and notices, kept off stdout so -o json stays parseable. */
  info(text: string): void;
}

export interface CommandContext extends Output {
  client: Client;
  namespace: string;
  output: OutputFormat;
  /** --dry-run; `client` already answers writes without sending them. */
  dryRun: DryRun;
  now(): number;
  /**
   * The API server's time as of its last answer (to the second), else now(): a stamp others compare
   * with the operator's clock is taken from the cluster, not from this machine.
   */
  serverNow(): number;
  /** Resolves after ms, or rejects once the signal aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** The cluster's list + watch, which --wait follows; absent where there is none (the waits then list each second). */
  watcher?: WatchClient;
  /**
   * The snapshot registry: --registry, else OCI_REGISTRY, else the operator's own
   * (operatorconfig.ts); undefined when none is found.
   */
  registry(): Promise<RegistryClient | undefined>;
}

/** A command whose SDK errors (src/sdk/errors.ts) end as the plugin's, with their exit codes. */
export function command(spec: Command): Command {
  return {
    ...spec,
    async run(ctx, args) {
      try {
        await spec.run(ctx, args);
      } catch (err) {
        throw pluginError(err);
      }
    },
  };
}
