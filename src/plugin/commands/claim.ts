import { API_VERSION_V1ALPHA1, type CocoonClaim, KIND_COCOONCLAIM } from "../../apis/v1alpha1/types.ts";
import { isAlreadyExists, isNotFound } from "../../controller/errors.ts";
import { COCOONCLAIMS, COCOONSETS } from "../../controller/resources.ts";
import { generatedName } from "../../pool/names.ts";
import type { Command, CommandContext } from "../command.ts";
import { PluginError, UsageError } from "../errors.ts";
import { stringFlag } from "../flags.ts";
import { announce, formatStructured, objectName } from "../output.ts";
import { findClaim, getPool, judgeClaim, poolsNotServed } from "../pools.ts";
import { DEFAULT_WAIT_MS, WAIT_FLAGS, WarningWatch, waitTimeout, waitUntil } from "../wait.ts";

export const claim: Command = {
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
    await getPool(ctx, poolName);
    const name = stringFlag(args, "name") || generatedName(poolName);
    const annotations = parseAnnotations(stringFlag(args, "annotate"));
    const warnings = await WarningWatch.start(ctx, KIND_COCOONCLAIM, name);
    let created = await createClaim(ctx, poolName, name, annotations);
    if (ctx.dryRun !== "none") {
      // Nothing was stored: there is no claim to wait for or set to print.
      if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(created, ctx.output));
      else announce(ctx, COCOONCLAIMS, name, "created");
      return;
    }
    if (ctx.output === "table" || ctx.output === "wide") announce(ctx, COCOONCLAIMS, name, "created");
    const explicit = waitTimeout(args);
    const until = explicit !== undefined ? "ready" : ctx.output === "name" ? "bound" : undefined;
    if (until) {
      const waited = await waitUntil(
        ctx,
        {
          what: `cocoonclaim "${name}" to ${until === "ready" ? "be Ready" : "be Bound"}`,
          read: () => findClaim(ctx, name),
          judge: (c) => judgeClaim(c, name, until),
          warnings,
        },
        explicit ?? DEFAULT_WAIT_MS,
      );
      if (waited) created = waited;
    }
    const set = created.status?.cocoonSetRef?.name;
    if (ctx.output === "name") ctx.out(objectName(COCOONSETS, set ?? ""));
    else if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(created, ctx.output));
    else if (set) ctx.out(`${objectName(COCOONSETS, set)} bound`);
  },
};

function parseAnnotations(value: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (value ?? "").split(",").filter((p) => p !== "")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new UsageError(`--annotate wants KEY=VALUE, got "${pair}"`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

async function createClaim(
  ctx: CommandContext,
  pool: string,
  name: string,
  annotations: Record<string, string>,
): Promise<CocoonClaim> {
  try {
    return await ctx.client.create<CocoonClaim>(COCOONCLAIMS, ctx.namespace, {
      apiVersion: API_VERSION_V1ALPHA1,
      kind: KIND_COCOONCLAIM,
      metadata: {
        name,
        namespace: ctx.namespace,
        ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      },
      spec: { poolRef: { name: pool } },
    });
  } catch (err) {
    if (isNotFound(err)) throw poolsNotServed();
    if (isAlreadyExists(err)) {
      throw new PluginError(
        `cocoonclaim "${name}" already exists in namespace "${ctx.namespace}": choose another --name`,
      );
    }
    throw err;
  }
}
