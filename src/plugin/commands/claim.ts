import { COCOONCLAIMS, COCOONSETS } from "../../controller/resources.ts";
import { generatedName } from "../../pool/names.ts";
import { claimFrom } from "../../sdk/claims.ts";
import { type Command, command } from "../command.ts";
import { UsageError } from "../errors.ts";
import { stringFlag } from "../flags.ts";
import { announce, formatStructured, objectName } from "../output.ts";
import { DEFAULT_WAIT_MS, pluginSession, pluginWait, WAIT_FLAGS, waitTimeout } from "../wait.ts";

export const claim: Command = command({
  name: "claim",
  summary: "Claim a warm set from a pool (prints the claim, or with -o name the bound set)",
  description: `Creates a CocoonClaim of POOL (named --name, else <pool>-<5 characters>); the operator binds
one ready member of the pool to it, and the set is the claim's from then on: deleting the claim
(kubectl cocoon release CLAIM) deletes the set and its snapshots. --annotate KEY=VALUE (repeatable as a
comma list) puts cocoonset.cocoonstack.io/ idle and expiry annotations on the claim, which pass to the
set at bind time. With --wait the command returns once the bound set is Running (a Suspended pool's
member is woken first). -o name prints the bound set as cocoonset.cocoonset.cocoonstack.io/NAME, and so waits
at least until the claim is Bound (the default timeout without --wait).`,
  positionals: [{ name: "POOL", complete: "cocoonpools" }],
  flags: [
    ...WAIT_FLAGS,
    { name: "name", kind: "string", value: "NAME", help: "the claim's name (default <pool>-<5 characters>)" },
    {
      name: "annotate",
      kind: "string",
      value: "KEY=VALUE[,KEY=VALUE]",
      help: "annotations for the claim, e.g. cocoonset.cocoonstack.io/suspend-after-idle=30m",
    },
  ],
  examples: [
    "claim warm --wait",
    "claim warm --wait -o name",
    "claim warm --annotate cocoonset.cocoonstack.io/expire-at=2026-06-01T00:00:00Z",
  ],
  async run(ctx, args) {
    const [poolName = ""] = args.positionals;
    const name = stringFlag(args, "name") || generatedName(poolName);
    const annotations = parseAnnotations(stringFlag(args, "annotate"));
    const explicit = waitTimeout(args);
    const dryRun = ctx.dryRun !== "none";
    // Nothing is stored in a dry run: there is no claim to wait for or set to print.
    const until = dryRun
      ? undefined
      : explicit !== undefined
        ? "ready"
        : ctx.output === "name"
          ? "bound"
          : undefined;
    const timeout = explicit ?? DEFAULT_WAIT_MS;
    const claimed = await claimFrom(pluginSession(ctx, timeout), poolName, name, {
      annotations,
      ...(until ? { until, wait: pluginWait(ctx, timeout) } : {}),
      onCreated: (created) => {
        if (dryRun) {
          if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(created, ctx.output));
          else announce(ctx, COCOONCLAIMS, name, "created");
        } else if (ctx.output === "table" || ctx.output === "wide")
          announce(ctx, COCOONCLAIMS, name, "created");
      },
    });
    if (dryRun) return;
    const set = claimed.status?.cocoonSetRef?.name;
    if (ctx.output === "name") ctx.out(objectName(COCOONSETS, set ?? ""));
    else if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(claimed, ctx.output));
    else if (set) ctx.out(`${objectName(COCOONSETS, set)} bound`);
  },
});

function parseAnnotations(value: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (value ?? "").split(",").filter((p) => p !== "")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new UsageError(`--annotate wants KEY=VALUE, got "${pair}"`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}
