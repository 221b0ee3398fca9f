// Which sets a command acts on, as kubectl picks objects: one by name, or every set of the namespace
// (of every namespace with -A, for `status`) whose labels match -l SELECTOR.

import type { CocoonSet } from "../apis/v1/types.ts";
import { COCOONSETS } from "../controller/resources.ts";
import { getSet } from "./cluster.ts";
import type { CommandContext } from "./command.ts";
import { PluginError, UsageError } from "./errors.ts";
import type { FlagSpec, ParsedArgs } from "./flags.ts";
import { stringFlag } from "./flags.ts";

export const SELECTOR_FLAG: FlagSpec = {
  name: "selector",
  short: "l",
  kind: "string",
  value: "SELECTOR",
  help: "every set whose labels match (kubectl's label selector: team=eval, tier!=prod, env in (a,b))",
};

export const ALL_NAMESPACES_FLAG: FlagSpec = {
  name: "all-namespaces",
  short: "A",
  kind: "boolean",
  help: "sets of every namespace",
};

/** The namespace's (or, with -A, every namespace's) sets that match `selector`, by namespace then name. */
export async function listSets(
  ctx: Pick<CommandContext, "client" | "namespace">,
  selector: string | undefined,
  allNamespaces: boolean,
): Promise<CocoonSet[]> {
  const { items } = await ctx.client.list<CocoonSet>(
    COCOONSETS,
    allNamespaces ? undefined : ctx.namespace,
    selector ? { labelSelector: selector } : {},
  );
  return items.sort(
    (a, b) =>
      (a.metadata.namespace ?? "").localeCompare(b.metadata.namespace ?? "") ||
      (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
  );
}

/** SET, or every set -l selects: exactly one of the two; a selector matching nothing is an error. */
export async function targetSets(ctx: CommandContext, args: ParsedArgs): Promise<CocoonSet[]> {
  const [name] = args.positionals;
  const selector = stringFlag(args, "selector");
  if (name !== undefined && selector !== undefined) {
    throw new UsageError(`give SET or -l SELECTOR, not both`);
  }
  if (name !== undefined) return [await getSet(ctx, name)];
  if (selector === undefined) throw new UsageError("needs SET or -l SELECTOR");
  const sets = await listSets(ctx, selector, false);
  if (sets.length === 0) {
    throw new PluginError(`no cocoonsets in namespace "${ctx.namespace}" match -l ${selector}`);
  }
  return sets;
}
