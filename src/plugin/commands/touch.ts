import { COCOONSETS } from "../../controller/resources.ts";
import { ANN_LAST_ACTIVITY } from "../../idle/policy.ts";
import { formatRFC3339 } from "../../rfc3339.ts";
import { getSet } from "../cluster.ts";
import { type Command, command } from "../command.ts";
import { DRY_RUN_FLAG } from "../dryrun.ts";
import { announce, formatStructured } from "../output.ts";

export const touch: Command = command({
  name: "touch",
  summary: "Record activity on a set now (postpones an idle suspend)",
  description: `Sets the annotation ${ANN_LAST_ACTIVITY} to the API server's current time (RFC 3339,
UTC, from its answer to the command's read of the set, so a wrong clock here does not matter) with a
merge patch. The spec is untouched, so the generation does not change and nothing needs waiting for.`,
  positionals: [{ name: "SET", complete: "cocoonsets" }],
  flags: [DRY_RUN_FLAG],
  examples: ["touch demo"],
  async run(ctx, args) {
    const [name = ""] = args.positionals;
    await getSet(ctx, name);
    const stamp = formatRFC3339(ctx.serverNow());
    const cs = await ctx.client.patch(COCOONSETS, ctx.namespace, name, {
      metadata: { annotations: { [ANN_LAST_ACTIVITY]: stamp } },
    });
    if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(cs, ctx.output));
    else announce(ctx, COCOONSETS, name, `touched (${ANN_LAST_ACTIVITY}=${stamp})`);
  },
});
