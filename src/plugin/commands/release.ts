import type { CocoonClaim } from "../../apis/v1alpha1/types.ts";
import { isNotFound } from "../../controller/errors.ts";
import { COCOONCLAIMS } from "../../controller/resources.ts";
import { findSet } from "../cluster.ts";
import type { Command } from "../command.ts";
import { announce, formatStructured } from "../output.ts";
import { findClaim, getClaim } from "../pools.ts";
import { WAIT_FLAGS, WarningWatch, waitTimeout, waitUntil } from "../wait.ts";

export const release: Command = {
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
    const claim = await getClaim(ctx, name);
    const setName = claim.status?.cocoonSetRef?.name;
    const timeout = waitTimeout(args);
    const warnings = timeout === undefined ? undefined : await WarningWatch.start(ctx, "CocoonClaim", name);
    try {
      await ctx.client.delete(COCOONCLAIMS, ctx.namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const what = setName ? ` (cocoonset "${setName}" is deleted with it)` : "";
    if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(claim, ctx.output));
    else announce(ctx, COCOONCLAIMS, name, `released${what}`);
    if (warnings && timeout !== undefined && ctx.dryRun === "none") {
      await waitUntil<{ claim: CocoonClaim | undefined; setGone: boolean }>(
        ctx,
        {
          what: `cocoonclaim "${name}"${setName ? ` and cocoonset "${setName}"` : ""} to be gone`,
          read: async () => ({
            claim: await findClaim(ctx, name),
            setGone: setName === undefined || (await findSet(ctx, setName)) === undefined,
          }),
          judge: (s) =>
            !s.claim && s.setGone
              ? { kind: "done", summary: "released" }
              : {
                  kind: "waiting",
                  progress: s.claim
                    ? "the claim is being finalized"
                    : `cocoonset "${setName}" is being torn down`,
                },
          warnings,
        },
        timeout,
      );
    }
  },
};
