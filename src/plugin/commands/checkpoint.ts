import { type CocoonSet, KIND_COCOONSET } from "../../apis/v1/types.ts";
import {
  API_VERSION_V1ALPHA1,
  type CocoonCheckpoint,
  KIND_COCOONCHECKPOINT,
} from "../../apis/v1alpha1/types.ts";
import { isAlreadyExists, isNotFound } from "../../controller/errors.ts";
import { COCOONCHECKPOINTS, COCOONSETS } from "../../controller/resources.ts";
import {
  type CheckpointState,
  checkpointsNotServed,
  findCheckpoint,
  judgeCheckpoint,
} from "../checkpoints.ts";
import { getSet } from "../cluster.ts";
import type { Command, CommandContext } from "../command.ts";
import { DRY_RUN_FLAG } from "../dryrun.ts";
import { PluginError } from "../errors.ts";
import { announce, formatStructured } from "../output.ts";
import { setWait } from "../setstate.ts";
import { DEFAULT_WAIT_MS, WAIT_FLAGS, WarningWatch, waitTimeout, waitUntil } from "../wait.ts";

export const checkpoint: Command = {
  name: "checkpoint",
  summary: "Checkpoint a set under a name (suspends it for the copy, then restores its suspend state)",
  description: `Creates the CocoonCheckpoint NAME of the set. The operator copies each VM's :hibernate
snapshot to the tag ckpt-NAME once the set is Suspended at its current generation. A running set is
suspended first (spec.suspend=true), the command waits until the checkpoint is Ready, and then resumes
the set (spec.suspend=false); a set that was already suspended stays suspended. Because the resume
must follow the copy, the command waits whenever it suspended the set, with or without --wait (the
default timeout then). Without --wait, a set that was already suspended is left to the operator: the
command returns once the checkpoint is created. With --wait each stage (the suspend, the copy, the
resume) gets DURATION, and the command returns once the resumed set is Ready. If the suspend or the
copy fails or times out, the set is resumed all the same and the checkpoint is left as it is.`,
  positionals: [{ name: "SET", complete: "cocoonsets" }, { name: "NAME" }],
  flags: [...WAIT_FLAGS, DRY_RUN_FLAG],
  examples: ["checkpoint demo before-eval --wait", "checkpoint demo nightly -o yaml"],
  async run(ctx, args) {
    const [setName = "", name = ""] = args.positionals;
    const explicitWait = waitTimeout(args);
    const cs = await getSet(ctx, setName);
    const existing = await findCheckpoint(ctx, name);
    if (existing) throw alreadyExists(ctx, name, existing);
    const wasSuspended = cs.spec.suspend === true;
    const timeout = explicitWait ?? (wasSuspended ? undefined : DEFAULT_WAIT_MS);
    const warnings =
      timeout === undefined ? undefined : await WarningWatch.start(ctx, KIND_COCOONCHECKPOINT, name);
    let ck = await createCheckpoint(ctx, setName, name);
    announce(ctx, COCOONCHECKPOINTS, name, "created");
    if (ctx.dryRun !== "none") {
      // The copy needs a Suspended set; a dry run says the round it would make and stops.
      if (!wasSuspended)
        announce(ctx, COCOONSETS, setName, "suspended, and resumed once the checkpoint is Ready");
      return;
    }
    if (warnings && timeout !== undefined) {
      let suspended = false;
      try {
        if (!wasSuspended) {
          const setWarnings = await WarningWatch.start(ctx, KIND_COCOONSET, setName);
          const generation = await writeSuspend(ctx, setName, true);
          suspended = true;
          await waitUntil(
            ctx,
            setWait(ctx, setName, generation, { kind: "suspended" }, setWarnings),
            timeout,
          );
        }
        const read = async (): Promise<CheckpointState> => {
          const [current, set] = await Promise.all([findCheckpoint(ctx, name), getSet(ctx, setName)]);
          return { ck: current, set };
        };
        const waited = await waitUntil(
          ctx,
          {
            what: `cocooncheckpoint "${name}" to be Ready`,
            watched: { rt: COCOONCHECKPOINTS, name },
            read,
            judge: (s) => judgeCheckpoint(s, name),
            warnings,
          },
          timeout,
        );
        ck = waited.ck ?? ck;
      } catch (err) {
        if (suspended) await resumeAfterFailure(ctx, setName, name, err);
        throw err;
      }
      if (suspended) await resumeSet(ctx, setName, explicitWait);
    }
    if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(ck, ctx.output));
  },
};

function alreadyExists(ctx: CommandContext, name: string, existing?: CocoonCheckpoint): PluginError {
  const of = existing
    ? ` (of cocoonset "${existing.spec.cocoonSetRef.name}", phase ${existing.status?.phase ?? "(none)"})`
    : "";
  return new PluginError(
    `cocooncheckpoint "${name}" already exists in namespace "${ctx.namespace}"${of}: choose another name, or delete it first (kubectl delete cocooncheckpoint ${name})`,
  );
}

/** The API server judges the name (the CRD's CEL rule, a DNS subdomain); its message is shown as is. */
async function createCheckpoint(
  ctx: CommandContext,
  setName: string,
  name: string,
): Promise<CocoonCheckpoint> {
  try {
    return await ctx.client.create<CocoonCheckpoint>(COCOONCHECKPOINTS, ctx.namespace, {
      apiVersion: API_VERSION_V1ALPHA1,
      kind: KIND_COCOONCHECKPOINT,
      metadata: { name, namespace: ctx.namespace },
      spec: { cocoonSetRef: { name: setName } },
    });
  } catch (err) {
    if (isAlreadyExists(err)) throw alreadyExists(ctx, name);
    if (isNotFound(err)) throw checkpointsNotServed();
    throw err;
  }
}

/** Merge-patches spec.suspend; returns the generation the write produced. */
async function writeSuspend(ctx: CommandContext, setName: string, suspend: boolean): Promise<number> {
  const cs = await ctx.client.patch<CocoonSet>(COCOONSETS, ctx.namespace, setName, { spec: { suspend } });
  announce(ctx, COCOONSETS, setName, suspend ? "suspended" : "resumed");
  return cs.metadata.generation ?? 0;
}

/** spec.suspend=false; with an explicit --wait, until the set is Ready at the resume's generation. */
async function resumeSet(ctx: CommandContext, setName: string, timeout: number | undefined): Promise<void> {
  const warnings = timeout === undefined ? undefined : await WarningWatch.start(ctx, KIND_COCOONSET, setName);
  const generation = await writeSuspend(ctx, setName, false);
  if (warnings && timeout !== undefined) {
    await waitUntil(ctx, setWait(ctx, setName, generation, { kind: "ready" }, warnings), timeout);
  }
}

/** The set is resumed even when the copy did not finish; a failed resume is added to the error. */
async function resumeAfterFailure(
  ctx: CommandContext,
  setName: string,
  name: string,
  cause: unknown,
): Promise<void> {
  try {
    await resumeSet(ctx, setName, undefined);
  } catch (err) {
    if (cause instanceof PluginError) {
      throw new PluginError(
        `${cause.message}; resuming cocoonset "${setName}" failed too (${(err as Error).message}): run kubectl cocoon resume ${setName}`,
        cause.exitCode,
      );
    }
    throw cause;
  }
  const ck = await findCheckpoint(ctx, name).catch(() => undefined);
  if (ck && ck.status?.phase !== "Ready") {
    ctx.info(
      `cocooncheckpoint "${name}" is left in phase ${ck.status?.phase ?? "(none)"}: it completes the next time cocoonset "${setName}" is Suspended; delete it if not wanted (kubectl delete cocooncheckpoint ${name})`,
    );
  }
}
