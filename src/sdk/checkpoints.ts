// CocoonCheckpoints as the SDK reads and judges them (docs/checkpoints.md): one by name with a
// message when it is missing or its kind is not served, a set's checkpoints, and the --wait goal of
// `checkpoint`, Ready, judged together with the source set so a set that fails to suspend ends the wait.

import type { CocoonSet } from "../apis/v1/types.ts";
import {
  API_VERSION_V1ALPHA1,
  type CheckpointMember,
  type CocoonCheckpoint,
  KIND_COCOONCHECKPOINT,
} from "../apis/v1alpha1/types.ts";
import { isAlreadyExists, isNotFound, unlessNotFound } from "../controller/errors.ts";
import { COCOONCHECKPOINTS, COCOONSETS } from "../controller/resources.ts";
import { CocoonError, CocoonNotFoundError } from "./errors.ts";
import { WarningWatch } from "./events.ts";
import { changeSet } from "./setstate.ts";
import { type Session, type Verdict, type WaitOptions, type WaitSpec, waitFor } from "./wait.ts";

type Reader = Pick<Session, "client" | "namespace">;

/** The CRD is missing (404 on the collection): say what to apply instead of "not found". */
export function checkpointsNotServed(): CocoonNotFoundError {
  return new CocoonNotFoundError(
    "the cluster does not serve CocoonCheckpoint (cocoonset.cocoonstack.io/v1alpha1): apply config/crd (bases/cocoonset.cocoonstack.io_cocooncheckpoints.yaml) first",
    "KindNotServed",
  );
}

/** The checkpoint, or undefined when there is none of that name. */
export function findCheckpoint(ctx: Reader, name: string): Promise<CocoonCheckpoint | undefined> {
  return unlessNotFound(() => ctx.client.get<CocoonCheckpoint>(COCOONCHECKPOINTS, ctx.namespace, name));
}

export async function getCheckpoint(ctx: Reader, name: string): Promise<CocoonCheckpoint> {
  const ck = await findCheckpoint(ctx, name);
  if (ck) return ck;
  throw new CocoonNotFoundError(`cocooncheckpoint "${name}" not found in namespace "${ctx.namespace}"`);
}

/** The namespace's checkpoints of `set`, oldest first (by creation time, then name). */
export async function checkpointsOf(ctx: Reader, set: string): Promise<CocoonCheckpoint[]> {
  let items: CocoonCheckpoint[];
  try {
    ({ items } = await ctx.client.list<CocoonCheckpoint>(COCOONCHECKPOINTS, ctx.namespace));
  } catch (err) {
    if (isNotFound(err)) throw checkpointsNotServed();
    throw err;
  }
  return items
    .filter((ck) => ck.spec?.cocoonSetRef?.name === set)
    .sort(
      (a, b) =>
        (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "") ||
        (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
    );
}

/** The members that hold a snapshot (a member without a digest only tells a delete to probe). */
export function heldMembers(ck: CocoonCheckpoint): CheckpointMember[] {
  return (ck.status?.members ?? []).filter((m) => m.digest);
}

/** "main (ubuntu), sub-agent 1 (ubuntu), toolbox tools (ubuntu)". */
export function describeMembers(members: readonly CheckpointMember[]): string {
  return members
    .map((m) => {
      const place =
        m.role === "toolbox" ? `toolbox ${m.toolbox}` : m.role === "main" ? "main" : `sub-agent ${m.slot}`;
      return m.image ? `${place} (image ${m.image})` : place;
    })
    .join(", ");
}

export interface CheckpointState {
  /** Undefined once the checkpoint is gone. */
  ck: CocoonCheckpoint | undefined;
  set: CocoonSet | undefined;
}

export function judgeCheckpoint(state: CheckpointState, name: string): Verdict {
  const { ck, set } = state;
  if (!ck || ck.metadata.deletionTimestamp) {
    return { kind: "failed", reason: "Deleted", message: `cocooncheckpoint "${name}" was deleted` };
  }
  const phase = ck.status?.phase;
  if (phase === "Ready") {
    const held = heldMembers(ck);
    return {
      kind: "done",
      summary: `cocooncheckpoint "${name}" is Ready: ${held.length} snapshots, ${humanSize(ck.status?.totalBytes ?? 0)}`,
    };
  }
  if (phase === "Failed") {
    return {
      kind: "failed",
      reason: "Failed",
      message: `cocooncheckpoint "${name}" is Failed: ${ck.status?.message ?? "phase Failed"}`,
    };
  }
  if (set?.status?.phase === "Failed" && set.status.observedGeneration === set.metadata.generation) {
    const ready = set.status.conditions?.find((c) => c.type === "Ready");
    return {
      kind: "failed",
      reason: "Failed",
      message: `cocoonset "${set.metadata.name}" is Failed: ${ready?.message ?? "phase Failed"}`,
    };
  }
  const message = ck.status?.message ? `: ${ck.status.message}` : "";
  return { kind: "waiting", progress: `phase ${phase ?? "(none)"}${message}` };
}

/** 512B, 1.5KiB, 12.0MiB. */
export function humanSize(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < SIZE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value}B` : `${value.toFixed(1)}${SIZE_UNITS[unit]}`;
}

const SIZE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

/** The wait of a checkpoint until Ready, over the watched checkpoint and its source set. */
export function checkpointWait(
  name: string,
  setName: string,
  warnings?: WarningWatch,
): WaitSpec<CheckpointState> {
  return {
    what: `cocooncheckpoint "${name}" to be Ready`,
    queries: [
      { rt: COCOONCHECKPOINTS, name },
      { rt: COCOONSETS, name: setName },
    ],
    state: ([cks = [], sets = []]) => ({
      ck: cks[0] as CocoonCheckpoint | undefined,
      set: sets[0] as CocoonSet | undefined,
    }),
    judge: (s) => judgeCheckpoint(s, name),
    notServed: checkpointsNotServed,
    ...(warnings ? { warnings } : {}),
  };
}

function checkpointExists(ctx: Reader, name: string, existing?: CocoonCheckpoint): CocoonError {
  const of = existing
    ? ` (of cocoonset "${existing.spec.cocoonSetRef.name}", phase ${existing.status?.phase ?? "(none)"})`
    : "";
  return new CocoonError(
    "AlreadyExists",
    `cocooncheckpoint "${name}" already exists in namespace "${ctx.namespace}"${of}: choose another name, or delete it first (kubectl delete cocooncheckpoint ${name})`,
  );
}

/** The API server judges the name (the CRD's CEL rule, a DNS subdomain); its message is shown as is. */
async function createCheckpoint(ctx: Reader, setName: string, name: string): Promise<CocoonCheckpoint> {
  try {
    return await ctx.client.create<CocoonCheckpoint>(COCOONCHECKPOINTS, ctx.namespace, {
      apiVersion: API_VERSION_V1ALPHA1,
      kind: KIND_COCOONCHECKPOINT,
      metadata: { name, namespace: ctx.namespace },
      spec: { cocoonSetRef: { name: setName } },
    });
  } catch (err) {
    if (isAlreadyExists(err)) throw checkpointExists(ctx, name);
    if (isNotFound(err)) throw checkpointsNotServed();
    throw err;
  }
}

export interface CheckpointRun {
  /** The waits of the suspend and of the copy (default timeout when absent). */
  wait?: WaitOptions;
  /**
   * Await the copy of an already suspended set too; without it such a set is left to the operator
   * (the call returns once the checkpoint is created). A running set is always awaited: its resume
   * must follow the copy.
   */
  awaitSuspended?: boolean;
  /** The wait of the resume (until Ready); without it the resume is written and not awaited. */
  resumeWait?: WaitOptions;
  /** No write is stored (a dry run): stop after the create, there is nothing to wait for. */
  dryRun?: boolean;
  /** Each write as it is made: the checkpoint created, the set suspended or resumed. */
  onWritten?: (what: "created" | "suspended" | "resumed") => void;
  /** The checkpoint was left unfinished after a failure, in this phase. */
  onLeft?: (phase: string) => void;
}

/**
 * Checkpoints the set under `name`: a running set is suspended for the copy (the operator copies
 * each VM's :hibernate snapshot once the set is Suspended), the checkpoint awaited until Ready, and
 * the set resumed; an already suspended set stays suspended. When the suspend or the copy fails or
 * times out, the set is resumed all the same and the checkpoint left as it is.
 */
export async function takeCheckpoint(
  session: Session,
  setName: string,
  name: string,
  run: CheckpointRun = {},
): Promise<CocoonCheckpoint> {
  const cs = await unlessNotFound(() =>
    session.client.get<CocoonSet>(COCOONSETS, session.namespace, setName),
  );
  if (!cs)
    throw new CocoonNotFoundError(`cocoonset "${setName}" not found in namespace "${session.namespace}"`);
  const existing = await findCheckpoint(session, name);
  if (existing) throw checkpointExists(session, name, existing);
  const wasSuspended = cs.spec.suspend === true;
  const wait = wasSuspended && !run.awaitSuspended ? undefined : (run.wait ?? {});
  let ck = await createCheckpoint(session, setName, name);
  run.onWritten?.("created");
  if (run.dryRun) {
    if (!wasSuspended) run.onWritten?.("suspended");
    return ck;
  }
  if (!wait) return ck;
  const warnings = WarningWatch.ofCreated(session, KIND_COCOONCHECKPOINT, ck);
  let suspended = false;
  try {
    if (!wasSuspended) {
      await changeSet(session, setName, { spec: { suspend: true } }, { kind: "suspended" }, wait, () => {
        suspended = true;
        run.onWritten?.("suspended");
      });
    }
    ck = (await waitFor(session, checkpointWait(name, setName, warnings), wait)).ck ?? ck;
  } catch (err) {
    if (suspended) await resumeAfterFailure(session, setName, name, err, run);
    throw err;
  }
  if (suspended) await resume(session, setName, run.resumeWait, run);
  return ck;
}

function resume(session: Session, setName: string, wait: WaitOptions | undefined, run: CheckpointRun) {
  return changeSet(session, setName, { spec: { suspend: false } }, { kind: "ready" }, wait, () =>
    run.onWritten?.("resumed"),
  );
}

/** The set is resumed even when the copy did not finish; a failed resume is added to the error. */
async function resumeAfterFailure(
  session: Session,
  setName: string,
  name: string,
  cause: unknown,
  run: CheckpointRun,
): Promise<void> {
  try {
    await resume(session, setName, undefined, run);
  } catch (err) {
    if (cause instanceof CocoonError) {
      cause.message = `${cause.message}; resuming cocoonset "${setName}" failed too (${(err as Error).message}): run kubectl cocoon resume ${setName}`;
    }
    throw cause;
  }
  const ck = await findCheckpoint(session, name).catch(() => undefined);
  if (ck && ck.status?.phase !== "Ready") run.onLeft?.(ck.status?.phase ?? "(none)");
}
