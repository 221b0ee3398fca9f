// CocoonRestores as the SDK reads and judges them (docs/checkpoints.md): the --wait goal of
// `restore`, Restored, or the operator's reason when it refused or failed.

import { randomBytes } from "node:crypto";
import type { CocoonSet } from "../apis/v1/types.ts";
import { API_VERSION_V1ALPHA1, type CocoonRestore, KIND_COCOONRESTORE } from "../apis/v1alpha1/types.ts";
import { isAlreadyExists, isNotFound, unlessNotFound } from "../controller/errors.ts";
import { COCOONRESTORES, COCOONSETS } from "../controller/resources.ts";
import { getCheckpoint } from "./checkpoints.ts";
import { CocoonError, CocoonNotFoundError } from "./errors.ts";
import { WarningWatch } from "./events.ts";
import { type Session, type Verdict, type WaitOptions, type WaitSpec, waitFor } from "./wait.ts";

/** The CRD is missing (404 on the collection): say what to apply instead of "not found". */
export function restoresNotServed(): CocoonNotFoundError {
  return new CocoonNotFoundError(
    "the cluster does not serve CocoonRestore (cocoonset.cocoonstack.io/v1alpha1): apply config/crd (bases/cocoonset.cocoonstack.io_cocoonrestores.yaml) and config/rbac first",
    "KindNotServed",
  );
}

export function judgeRestore(r: CocoonRestore | undefined, name: string): Verdict {
  if (!r || r.metadata.deletionTimestamp) {
    return { kind: "failed", reason: "Deleted", message: `cocoonrestore "${name}" was deleted` };
  }
  const phase = r.status?.phase;
  if (phase === "Restored") {
    return { kind: "done", summary: `cocoonrestore "${name}" is Restored: ${r.status?.message ?? ""}` };
  }
  if (phase === "Failed") {
    return {
      kind: "failed",
      reason: r.status?.reason || "Failed",
      message: `cocoonrestore "${name}" is Failed (${r.status?.reason ?? "no reason"}): ${r.status?.message ?? ""}`,
    };
  }
  const message = r.status?.message ? `: ${r.status.message}` : "";
  return { kind: "waiting", progress: `phase ${phase ?? "(none)"}${message}` };
}

/** The wait of a restore until Restored, over the watched restore. */
export function restoreWait(name: string, warnings?: WarningWatch): WaitSpec<CocoonRestore | undefined> {
  return {
    what: `cocoonrestore "${name}" to be Restored`,
    queries: [{ rt: COCOONRESTORES, name }],
    state: ([items = []]) => items[0] as CocoonRestore | undefined,
    judge: (r) => judgeRestore(r, name),
    notServed: restoresNotServed,
    ...(warnings ? { warnings } : {}),
  };
}

/** `<set>-<checkpoint>-<5 characters>`, cut to leave room for the suffix under 253. */
export function restoreName(setName: string, checkpointName: string): string {
  const suffix = randomBytes(4).toString("hex").slice(0, 5);
  return `${`${setName}-${checkpointName}`.slice(0, 246)}-${suffix}`;
}

export interface RestoreRun {
  /** The CocoonRestore's name (default restoreName). */
  name?: string;
  /** Wait until Restored; without it, return once the restore is created. */
  wait?: WaitOptions;
  onCreated?: (r: CocoonRestore) => void;
}

/**
 * Rolls `setName` back to the Ready checkpoint `checkpointName` with a CocoonRestore: the operator
 * suspends a running set, puts each checkpointed snapshot in place and resumes it.
 */
export async function restoreTo(
  session: Session,
  setName: string,
  checkpointName: string,
  run: RestoreRun = {},
): Promise<CocoonRestore> {
  const cs = await unlessNotFound(() =>
    session.client.get<CocoonSet>(COCOONSETS, session.namespace, setName),
  );
  if (!cs)
    throw new CocoonNotFoundError(`cocoonset "${setName}" not found in namespace "${session.namespace}"`);
  const ck = await getCheckpoint(session, checkpointName);
  if (ck.metadata.deletionTimestamp) {
    throw new CocoonError("CheckpointDeleting", `cocooncheckpoint "${checkpointName}" is being deleted`);
  }
  if (ck.status?.phase !== "Ready") {
    const why = ck.status?.message ? `: ${ck.status.message}` : "";
    throw new CocoonError(
      "CheckpointNotReady",
      `cocooncheckpoint "${checkpointName}" is not Ready (phase ${ck.status?.phase ?? "(none)"}${why}); a restore to it would be refused`,
    );
  }
  const name = run.name ?? restoreName(setName, checkpointName);
  let r: CocoonRestore;
  try {
    r = await session.client.create<CocoonRestore>(COCOONRESTORES, session.namespace, {
      apiVersion: API_VERSION_V1ALPHA1,
      kind: KIND_COCOONRESTORE,
      metadata: { name, namespace: session.namespace },
      spec: { cocoonSetRef: { name: setName }, checkpointRef: { name: checkpointName } },
    });
  } catch (err) {
    if (isAlreadyExists(err)) {
      throw new CocoonError(
        "AlreadyExists",
        `cocoonrestore "${name}" already exists in namespace "${session.namespace}": a restore is one-shot; choose another --name`,
      );
    }
    if (isNotFound(err)) throw restoresNotServed();
    throw err;
  }
  run.onCreated?.(r);
  if (!run.wait) return r;
  const warnings = WarningWatch.ofCreated(session, KIND_COCOONRESTORE, r);
  return (await waitFor(session, restoreWait(name, warnings), run.wait)) ?? r;
}
