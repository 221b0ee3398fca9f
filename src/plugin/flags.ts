// Command-line parsing in kubectl's style: flags before or after the positionals, `--flag value`,
// `--flag=value`, `-n value`, `-nvalue`, and `--` ending the flags. An optional-value flag (--wait)
// takes a value only in the `--wait=VALUE` form, so `--wait SET` keeps SET a positional.

import { UsageError } from "./errors.ts";

export type FlagKind = "string" | "boolean" | "optional";

export interface FlagSpec {
  /** Long name without the dashes. */
  name: string;
  short?: string;
  kind: FlagKind;
  /** Placeholder shown in help, e.g. DURATION. */
  value?: string;
  help: string;
  /** What completes the flag's value. */
  complete?: CompletionKind;
  /** A string flag the command cannot run without (usage shows it unbracketed). */
  required?: boolean;
}

/** The objects a positional or a flag value completes to. */
export type CompletionKind =
  | "cocoonsets"
  | "cocooncheckpoints"
  | "cocoonpools"
  | "cocoonclaims"
  | "cocoon-pods"
  | "nodes"
  | "namespaces"
  | "contexts"
  | "outputs"
  | "files";

export interface ParsedArgs {
  positionals: string[];
  /** Flag long name → its value; true for a boolean or a bare optional-value flag. */
  flags: Map<string, string | true>;
}

/**
 * With lenient (completion reads the global flags of a half-typed line), unknown flags and a last
 * flag still waiting for its value are skipped instead of refused.
 */
export function parseArgs(argv: readonly string[], specs: readonly FlagSpec[], lenient = false): ParsedArgs {
  const byLong = new Map(specs.map((s) => [s.name, s]));
  const byShort = new Map(specs.filter((s) => s.short).map((s) => [s.short as string, s]));
  const positionals: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      const inline = eq < 0 ? undefined : arg.slice(eq + 1);
      const spec = byLong.get(name);
      if (!spec) {
        if (lenient) continue;
        throw new UsageError(`unknown flag: --${name}`);
      }
      i = take(spec, `--${name}`, inline, argv, i, flags, lenient);
      continue;
    }
    if (arg.startsWith("-") && arg.length > 1) {
      const letter = arg.slice(1, 2);
      const spec = byShort.get(letter);
      if (!spec) {
        if (lenient) continue;
        throw new UsageError(`unknown shorthand flag: '${letter}' in ${arg}`);
      }
      const rest = arg.slice(2);
      const inline = rest === "" ? undefined : rest.startsWith("=") ? rest.slice(1) : rest;
      i = take(spec, `-${letter}`, inline, argv, i, flags, lenient);
      continue;
    }
    positionals.push(arg);
  }
  return { positionals, flags };
}

/** Records one flag; returns the index of the last argv entry it consumed. */
function take(
  spec: FlagSpec,
  written: string,
  inline: string | undefined,
  argv: readonly string[],
  i: number,
  flags: Map<string, string | true>,
  lenient: boolean,
): number {
  switch (spec.kind) {
    case "boolean":
      if (inline === undefined || inline === "true") flags.set(spec.name, true);
      else if (inline === "false") flags.delete(spec.name);
      else throw new UsageError(`invalid argument "${inline}" for "${written}": want true or false`);
      return i;
    case "optional":
      flags.set(spec.name, inline ?? true);
      return i;
    case "string": {
      if (inline !== undefined) {
        flags.set(spec.name, inline);
        return i;
      }
      const next = argv[i + 1];
      if (next === undefined) {
        if (lenient) return i;
        throw new UsageError(`flag needs an argument: ${written}`);
      }
      flags.set(spec.name, next);
      return i + 1;
    }
  }
}

/** The flag's string value, undefined when absent. */
export function stringFlag(args: ParsedArgs, name: string): string | undefined {
  const value = args.flags.get(name);
  return typeof value === "string" ? value : undefined;
}

export function booleanFlag(args: ParsedArgs, name: string): boolean {
  return args.flags.get(name) === true;
}

/** The spec a written flag (`--name` or `-x`) refers to. */
export function findFlag(word: string, flags: readonly FlagSpec[]): FlagSpec | undefined {
  if (word.startsWith("--")) return flags.find((f) => f.name === word.slice(2));
  return word.length === 2 ? flags.find((f) => f.short === word.slice(1)) : undefined;
}

/** The words that are neither flags nor the values of string flags written apart from them. */
export function positionalWords(words: readonly string[], flags: readonly FlagSpec[]): string[] {
  return positionalIndices(words, flags).map((i) => words[i] as string);
}

/** Where positionalWords' words stand in `words`. */
export function positionalIndices(words: readonly string[], flags: readonly FlagSpec[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    if (word === "--") {
      for (let j = i + 1; j < words.length; j++) out.push(j);
      break;
    }
    if (!word.startsWith("-") || word === "-") out.push(i);
    else if (!word.includes("=") && findFlag(word, flags)?.kind === "string") i++;
  }
  return out;
}
