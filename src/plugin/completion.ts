// Shell completion. `kubectl-cocoon __complete WORDS…` answers in cobra's protocol (one candidate a
// line, then `:<directive>`), which kubectl (1.26+) uses through the `kubectl_complete-cocoon`
// executable; `kubectl cocoon completion bash|zsh` prints a script for the standalone binary.

import type { Pod } from "../apis/core.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import type { CocoonCheckpoint, CocoonClaim, CocoonPool } from "../apis/v1alpha1/types.ts";
import { vmNameOf } from "../contract/pod.ts";
import {
  COCOONCHECKPOINTS,
  COCOONCLAIMS,
  COCOONPOOLS,
  COCOONSETS,
  NODES,
  PODS,
} from "../controller/resources.ts";
import type { Command, CommandContext } from "./command.ts";
import { type CompletionKind, type FlagSpec, findFlag, positionalWords } from "./flags.ts";
import { OUTPUT_FORMATS } from "./output.ts";

/** cobra's ShellCompDirective values. */
const DIRECTIVE_DEFAULT = 0;
const DIRECTIVE_NO_FILE = 4;

export const COMPLETION_SHELLS = ["bash", "zsh"] as const;

export interface CompletionSources {
  context(): CommandContext;
  contexts(): string[];
}

/** The candidates for the last word of `words` (the word being typed, possibly ""). */
export async function complete(
  words: readonly string[],
  commands: readonly Command[],
  globals: readonly FlagSpec[],
  builtins: readonly string[],
  sources: CompletionSources,
): Promise<string> {
  const current = words.at(-1) ?? "";
  const before = words.slice(0, -1);
  const name = positionalWords(before, globals)[0];
  const command = commands.find((c) => c.name === name);
  const flags = [...globals, ...(command?.flags ?? [])];
  const previous = before.at(-1) ?? "";
  const pendingFlag =
    previous.startsWith("-") && !previous.includes("=") ? findFlag(previous, flags) : undefined;
  let kind: CompletionKind | undefined;
  let candidates: string[] = [];
  if (pendingFlag?.kind === "string") kind = pendingFlag.complete;
  else if (current.startsWith("-")) candidates = flags.map((f) => `--${f.name}`);
  else if (name === undefined || (name === "help" && positionalWords(before, flags).length === 1))
    candidates = [...commands.map((c) => c.name), ...builtins];
  else if (name === "completion") candidates = [...COMPLETION_SHELLS];
  else if (command) kind = command.positionals[positionalWords(before, flags).length - 1]?.complete;
  if (kind === "files") return `\n:${DIRECTIVE_DEFAULT}`;
  if (kind) candidates = await lookup(kind, sources, command).catch(() => []);
  const matching = candidates.filter((c) => c.startsWith(current));
  return `${matching.join("\n")}\n:${DIRECTIVE_NO_FILE}`;
}

async function lookup(
  kind: CompletionKind,
  sources: CompletionSources,
  _command: Command | undefined,
): Promise<string[]> {
  switch (kind) {
    case "outputs":
      return [...OUTPUT_FORMATS];
    case "contexts":
      return sources.contexts();
    case "namespaces": {
      const ctx = sources.context();
      const { items } = await ctx.client.list<{ metadata: { name?: string } }>(
        { group: "", version: "v1", plural: "namespaces", kind: "Namespace", namespaced: false },
        undefined,
      );
      return names(items);
    }
    case "cocoonsets": {
      const ctx = sources.context();
      return names((await ctx.client.list<CocoonSet>(COCOONSETS, ctx.namespace)).items);
    }
    case "cocooncheckpoints": {
      const ctx = sources.context();
      return names((await ctx.client.list<CocoonCheckpoint>(COCOONCHECKPOINTS, ctx.namespace)).items);
    }
    case "cocoonpools": {
      const ctx = sources.context();
      return names((await ctx.client.list<CocoonPool>(COCOONPOOLS, ctx.namespace)).items);
    }
    case "cocoonclaims": {
      const ctx = sources.context();
      return names((await ctx.client.list<CocoonClaim>(COCOONCLAIMS, ctx.namespace)).items);
    }
    case "cocoon-pods": {
      const ctx = sources.context();
      return names((await ctx.client.list<Pod>(PODS, ctx.namespace)).items.filter((p) => vmNameOf(p) !== ""));
    }
    case "nodes": {
      const ctx = sources.context();
      return names((await ctx.client.list<{ metadata: { name?: string } }>(NODES, undefined)).items);
    }
    case "files":
      return [];
  }
}

function names(items: readonly { metadata: { name?: string } }[]): string[] {
  return items
    .map((i) => i.metadata.name ?? "")
    .filter((n) => n !== "")
    .sort();
}

/** A completion script for `kubectl-cocoon` run directly (kubectl itself uses kubectl_complete-cocoon). */
export function completionScript(shell: (typeof COMPLETION_SHELLS)[number]): string {
  const bash = `_kubectl_cocoon() {
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  local out
  out=$(kubectl-cocoon __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
  local directive="\${out##*:}"
  out="\${out%:*}"
  COMPREPLY=($(compgen -W "$out" -- "$cur"))
  if [ "$directive" = "0" ] && [ \${#COMPREPLY[@]} -eq 0 ]; then COMPREPLY=($(compgen -f -- "$cur")); fi
}
complete -F _kubectl_cocoon kubectl-cocoon
`;
  return shell === "bash" ? bash : `autoload -U +X bashcompinit && bashcompinit\n${bash}`;
}
