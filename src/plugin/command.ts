// What a command is (one entry of the table in commands/index.ts) and what it is given to run.

import type { Client } from "../controller/client.ts";
import type { RegistryClient } from "../registry/index.ts";
import type { CompletionKind, FlagSpec, ParsedArgs } from "./flags.ts";
import type { OutputFormat } from "./output.ts";

export interface PositionalSpec {
  /** As written in usage, e.g. SET. */
  name: string;
  complete?: CompletionKind;
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
  /** The command prints `-o name` (kind/name of its result); others refuse that format. */
  nameOutput?: boolean;
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
  now(): number;
  sleep(ms: number): Promise<void>;
  /** The snapshot registry (--registry, else OCI_REGISTRY); undefined when none is configured. */
  registry(): RegistryClient | undefined;
}
