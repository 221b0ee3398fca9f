import { COCOONCLAIMS } from "../../controller/resources.ts";
import { releaseClaim } from "../../sdk/claims.ts";
import { type Command, command } from "../command.ts";
import { announce, formatStructured } from "../output.ts";
import { pluginSession, pluginWait, WAIT_FLAGS, waitTimeout } from "../wait.ts";

export const release: Command = command({
  name: "release",
  summary: "Release a claim: delete it and, with it, its bound set and that set's snapshots",
  description: `Deletes the CocoonClaim CLAIM. The operator then deletes the set bound to it, which is torn
down as any deleted CocoonSet is (its VMs, then their snapshot tags), and lets the claim go. The pool
does not get the set back: it replenishes with a fresh member. With --wait the command returns once
the claim and its set are both gone.`,
  positionals: [{ name: "CLAIM", complete: "cocoonclaims" }],
  flags: [...WAIT_FLAGS],
  examples: ["release warm-x7k2p", "release warm-x7k2p --wait"],
  async run(ctx, args) {
    const [name = ""] = args.positionals;
    const timeout = waitTimeout(args);
    const wait = timeout !== undefined && ctx.dryRun === "none" ? pluginWait(ctx, timeout) : undefined;
    await releaseClaim(pluginSession(ctx, timeout), name, wait, (claim) => {
      const setName = claim.status?.cocoonSetRef?.name;
      const what = setName ? ` (cocoonset "${setName}" is deleted with it)` : "";
      if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(claim, ctx.output));
      else announce(ctx, COCOONCLAIMS, name, `released${what}`);
    });
  },
});
