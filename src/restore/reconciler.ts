// The CocoonRestore reconciler (docs/checkpoints.md): rolls a set back to a checkpoint in place. It
// takes the set (a hold annotation written by compare-and-swap: one restore at a time), suspends it if
// it runs, and once the set is Suspended at its generation (every `:hibernate` confirmed by the
// suspend gate) puts each member's checkpointed manifest in place as that VM's `:hibernate`, owes
// those VMs a restore, and returns spec.suspend to what it was. The set's own pass does the rest as
// for any wake: the pods restore from the copies, and step 10 drops each copy once its VM runs.
//
// The `:hibernate` replaced is the live state the request discards; nothing else replaces one
// (src/checkpoint/copy.ts). Every refusal is decided before the hold is taken, or undoes the hold
// before anything else was written, so a refused restore touches nothing.

import { statusMergePatch } from "../apis/status.ts";
import { API_VERSION, type CocoonSet, KIND_COCOONSET } from "../apis/v1/types.ts";
import {
  API_VERSION_V1ALPHA1,
  type CocoonCheckpoint,
  type CocoonRestore,
  type CocoonRestoreStatus,
  KIND_COCOONRESTORE,
  type RestoredMember,
  type RestorePhase,
} from "../apis/v1alpha1/types.ts";
import { isDeepStrictEqual } from "../builtins.ts";
import type { CheckpointReader } from "../checkpoint/catalog.ts";
import { copyToHibernate } from "../checkpoint/copy.ts";
import { ANN_FROM_CHECKPOINT, ANN_RESTORE_HOLD } from "../checkpoint/keys.ts";
import { planBranch } from "../checkpoint/members.ts";
import type { Clock } from "../clock.ts";
import { ANN_HIBERNATE_RECLAIM } from "../contract/keys.ts";
import type { Client } from "../controller/client.ts";
import { deepCopyJson } from "../controller/deepcopy.ts";
import { type ApiError, isNotFound, isRefused, unlessNotFound } from "../controller/errors.ts";
import type { EventRecorder, EventType } from "../controller/events.ts";
import type { Reconciler, Request, Result } from "../controller/reconciler.ts";
import { COCOONCHECKPOINTS, COCOONRESTORES, COCOONSETS } from "../controller/resources.ts";
import {
  encodeRestoreHold,
  type Held,
  heldAgainst,
  type RestoreHold,
  restoreHoldBy,
  restoreHoldOf,
} from "../holds.ts";
import type { Logger } from "../log.ts";
import {
  oweRestores,
  type ReclaimRecord,
  readReclaim,
  reclaimPatchValue,
  recordVMs,
} from "../pass/reclaimrecord.ts";
import type { CheckpointRegistry } from "../registry/index.ts";
import { formatRFC3339 } from "../rfc3339.ts";
import {
  checkpointRefusal,
  isFinal,
  notRestoredYet,
  notSuspendedForCopy,
  type Refusal,
  refusePlan,
  refuseStart,
  restoreConditions,
  restoreDeadline,
  restoreDeadlineMs,
} from "./decide.ts";
import {
  EVENT_COPIED,
  EVENT_COPY_FAILED,
  EVENT_FAILED,
  EVENT_REFUSED,
  EVENT_RESTORED,
  EVENT_STARTED,
  EVENT_WRITE_REFUSED,
  REASON_COPY_FAILED,
  REASON_COPYING,
  REASON_DEADLINE_EXCEEDED,
  REASON_HOLD_REMOVED,
  REASON_RESTORED,
  REASON_RESUMING,
  REASON_SET_DELETED,
  REASON_SUSPENDING,
  REASON_WRITE_REFUSED,
} from "./keys.ts";

/** A step that waits for the cache to show the server's set again looks after this at the latest. */
const CACHE_LAG_MS = 1_000;
/** A restore waiting for another holder of its set looks again after this; the set's events come sooner. */
const HOLDER_WAIT_MS = 30_000;

/** Cached reads (read only: never edit what they return). */
export interface RestoreView {
  getRestore(namespace: string, name: string): CocoonRestore | undefined;
  listRestores(namespace: string): readonly CocoonRestore[];
  getCocoonSet(namespace: string, name: string): CocoonSet | undefined;
  listCocoonSets(namespace: string): readonly CocoonSet[];
  checkpoints: CheckpointReader;
}

export interface RestoreDeps {
  client: Client;
  view: RestoreView;
  registry: CheckpointRegistry;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
}

export class RestoreReconciler implements Reconciler {
  private readonly deps: RestoreDeps;

  constructor(deps: RestoreDeps) {
    this.deps = deps;
  }

  async reconcile(req: Request, signal: AbortSignal): Promise<Result> {
    const cached = this.deps.view.getRestore(req.namespace, req.name);
    if (!cached) return this.releaseOrphanedHolds(req);
    // A copy: each status write keeps it in step, so later writes of the pass diff against it.
    let r = deepCopyJson(cached);
    if (!isFinal(r.status?.phase) && !r.status?.resumed) {
      // Until the set is resumed, each step writes the set's hold or spec from this restore's progress.
      // A cache behind the restore's own last status write (a set event can run the pass before it
      // lands) would start it again or suspend the set it has just resumed: the server's restore decides.
      const current = await this.serverRestore(req.namespace, req.name);
      if (!current) return {};
      r = current;
    }
    if (isFinal(r.status?.phase)) {
      await this.removeHold(r);
      return {};
    }
    const deadline = restoreDeadlineMs(r);
    const now = this.deps.clock.now();
    if (deadline !== undefined && now >= deadline) return this.expire(r);
    let result: Result;
    try {
      result = r.status?.phase !== "Restoring" ? await this.begin(r) : await this.proceed(r, signal);
    } catch (err) {
      if (isRefused(err)) await this.writeRefused(r, err);
      throw err;
    }
    // A restore still under way is looked at again at its deadline, whether or not its set moves.
    if (deadline === undefined || isFinal(r.status?.phase) || result.requeue) return result;
    const untilDeadline = Math.max(1, deadline - now);
    return { ...result, requeueAfterMs: Math.min(result.requeueAfterMs ?? untilDeadline, untilDeadline) };
  }

  /**
   * The API server refused a write of the pass (an admission policy, a quota): the restore says so in
   * its status and a Warning, and the failed pass backs off; the write is tried again then.
   */
  private async writeRefused(r: CocoonRestore, err: ApiError): Promise<void> {
    const message = `the API server refused a write: ${err.message}; retrying with backoff`;
    if (r.status?.reason === REASON_WRITE_REFUSED && r.status.message === message) return;
    this.event(r, "Warning", EVENT_WRITE_REFUSED, message);
    await this.writeStatus(r, { ...r.status, reason: REASON_WRITE_REFUSED, message });
  }

  /**
   * Past its deadline the restore fails and lets go, and the set is left so that it can be resumed or
   * restored again: a set it suspended and copied nothing into goes back to its suspend state; one with
   * copies begun stays suspended (its VMs wake from whatever :hibernate holds when it is resumed); one
   * already resumed comes up on its own.
   */
  private async expire(r: CocoonRestore): Promise<Result> {
    const { namespace, setName } = names(r);
    const fresh = await unlessNotFound(() => this.deps.client.get<CocoonSet>(COCOONSETS, namespace, setName));
    const hold = restoreHoldBy(fresh, r.metadata.uid);
    const status = r.status ?? {};
    // A refused write may have come after copies landed: the set then stays suspended too.
    const copyBegun =
      status.members !== undefined ||
      status.reason === REASON_COPYING ||
      status.reason === REASON_COPY_FAILED ||
      status.reason === REASON_WRITE_REFUSED;
    let left = "";
    if (fresh && hold && !status.resumed) {
      if (!copyBegun && fresh.spec.suspend !== hold.suspend) {
        await this.deps.client.patch<CocoonSet>(COCOONSETS, namespace, setName, {
          spec: { suspend: hold.suspend },
        });
        left = `; nothing was copied and CocoonSet ${setName} goes back to ${hold.suspend ? "suspended" : "running"}`;
      } else if (copyBegun) {
        left = `; CocoonSet ${setName} stays suspended: resume it (its VMs wake from what :hibernate holds) or restore again`;
      }
    }
    const last = status.message ? `: ${status.message}` : "";
    await this.fail(
      r,
      REASON_DEADLINE_EXCEEDED,
      `not Restored within failureDeadline ${restoreDeadline(r)}${last}${left}`,
    );
    await this.dropHoldOnServer(namespace, setName, r.metadata.uid ?? "");
    return {};
  }

  /**
   * Refusals first (nothing touched), then the hold, then Restoring. A refusal is final, so it is
   * judged on the API server's set and checkpoint: the caches may not show yet a checkpoint that has
   * just gone Ready, or the restore holding the set.
   */
  private async begin(r: CocoonRestore): Promise<Result> {
    const { namespace, setName, ckName } = names(r);
    const fresh = await unlessNotFound(() => this.deps.client.get<CocoonSet>(COCOONSETS, namespace, setName));
    const cachedCk = this.deps.view.checkpoints.getCheckpoint(namespace, ckName);
    const refused = refuseStart({
      restore: r,
      set: fresh,
      checkpoint: cachedCk === "unavailable" ? cachedCk : await this.serverCheckpoint(namespace, ckName),
      branchedFrom: await this.branchedFrom(fresh),
      liveRestores: await this.liveRestores(namespace, fresh),
    });
    if (refused) return this.refuse(r, refused);
    if (!fresh) return {};
    const current = restoreHoldOf(fresh);
    // Past the refusals, a hold on the set is this restore's own or a stale one it may take over.
    const held = heldAgainst(
      fresh,
      "restore",
      current !== undefined && current !== "unreadable" ? current.uid : undefined,
    );
    if (held) return this.waitForHolder(r, held);
    // The hold is taken on the server's set, compare-and-swap: of two restores started together one
    // wins, and the other sees its hold.
    let hold: RestoreHold;
    if (current !== undefined && current !== "unreadable" && current.uid === r.metadata.uid) {
      hold = current;
    } else {
      // A stale hold (its restore is gone or finished) may have left the set suspended: the suspend
      // state to return to is the one it recorded.
      const before =
        current === undefined || current === "unreadable" ? fresh.spec.suspend === true : current.suspend;
      hold = {
        restore: r.metadata.name ?? "",
        uid: r.metadata.uid ?? "",
        checkpoint: ckName,
        suspend: before,
      };
      await this.deps.client.patch<CocoonSet>(COCOONSETS, namespace, setName, {
        metadata: {
          resourceVersion: fresh.metadata.resourceVersion,
          annotations: { [ANN_RESTORE_HOLD]: encodeRestoreHold(hold) },
        },
      });
    }
    // A checkpoint's delete lists the sets on the API server before its first tag delete. One begun
    // since the cache was read may have missed this hold, so the restore does not start: the hold goes.
    const ck = await unlessNotFound(() =>
      this.deps.client.get<CocoonCheckpoint>(COCOONCHECKPOINTS, namespace, ckName),
    );
    const ckRefusal = checkpointRefusal(ck, ckName);
    if (ckRefusal) {
      await this.dropHoldOnServer(namespace, setName, r.metadata.uid ?? "");
      return this.refuse(r, ckRefusal);
    }
    const message = hold.suspend
      ? `CocoonSet ${setName} is suspended; its snapshots are replaced once it is Suspended at its generation`
      : `suspending CocoonSet ${setName}: its current state is discarded`;
    await this.writeStatus(r, {
      phase: "Restoring",
      reason: REASON_SUSPENDING,
      message,
      suspendedBefore: hold.suspend,
      startTime: formatRFC3339(this.deps.clock.now()),
    });
    const started = `restoring CocoonSet ${setName} to CocoonCheckpoint ${ckName}`;
    this.event(r, "Normal", EVENT_STARTED, started);
    this.setEvent(fresh, "Normal", EVENT_STARTED, `${started} (CocoonRestore ${r.metadata.name})`);
    return { requeue: true };
  }

  /** Pending while another holds the set (its branch not finished): the reason, an event, a look later. */
  private async waitForHolder(r: CocoonRestore, held: Held): Promise<Result> {
    const message = `waiting: ${held.message}`;
    if (r.status?.reason !== held.reason || r.status?.message !== message) {
      await this.writeStatus(r, { ...r.status, phase: "Pending", reason: held.reason, message });
      this.event(r, "Normal", held.reason, message);
    }
    return { requeueAfterMs: HOLDER_WAIT_MS };
  }

  private async proceed(r: CocoonRestore, signal: AbortSignal): Promise<Result> {
    const { namespace, setName } = names(r);
    const cs = this.deps.view.getCocoonSet(namespace, setName);
    if (!cs || cs.metadata.deletionTimestamp) {
      await this.fail(
        r,
        REASON_SET_DELETED,
        `CocoonSet ${setName} was deleted during the restore; its teardown drops every snapshot tag it owes`,
      );
      return {};
    }
    const hold = restoreHoldBy(cs, r.metadata.uid);
    if (!hold) return this.holdMissing(r);
    let status = r.status ?? {};
    if (status.members === undefined) {
      if (cs.spec.suspend !== true) {
        await this.deps.client.patch<CocoonSet>(COCOONSETS, namespace, setName, { spec: { suspend: true } });
        return {};
      }
      const why = notSuspendedForCopy(cs);
      if (why) {
        await this.writeStatus(r, { ...status, reason: REASON_SUSPENDING, message: why });
        return {};
      }
      const copied = await this.copy(r, signal);
      if (!copied) return { requeueAfterMs: CACHE_LAG_MS };
      status = copied;
    }
    if (!status.resumed) {
      if (cs.spec.suspend !== hold.suspend) {
        await this.deps.client.patch<CocoonSet>(COCOONSETS, namespace, setName, {
          spec: { suspend: hold.suspend },
        });
      }
      const message = hold.suspend
        ? `CocoonSet ${setName} stays Suspended; its VMs restore from the checkpoint when it resumes`
        : `resuming CocoonSet ${setName} from the checkpoint`;
      status =
        (await this.writeStatus(r, { ...status, resumed: true, reason: REASON_RESUMING, message })).status ??
        status;
    }
    if (!hold.suspend) {
      const owed = readReclaim(cs.metadata.annotations?.[ANN_HIBERNATE_RECLAIM]).value.restore;
      const why = notRestoredYet(
        cs,
        owed,
        (status.members ?? []).map((m) => m.vmName),
      );
      if (why) {
        await this.writeStatus(r, { ...status, reason: REASON_RESUMING, message: why });
        return {};
      }
    }
    const count = status.members?.length ?? 0;
    const done = hold.suspend
      ? `${count} VMs of CocoonSet ${setName} restore from CocoonCheckpoint ${hold.checkpoint} when it resumes`
      : `${count} VMs of CocoonSet ${setName} restored from CocoonCheckpoint ${hold.checkpoint}`;
    await this.writeStatus(r, {
      ...status,
      phase: "Restored",
      reason: REASON_RESTORED,
      message: done,
      completionTime: formatRFC3339(this.deps.clock.now()),
    });
    this.event(r, "Normal", EVENT_RESTORED, done);
    this.setEvent(cs, "Normal", EVENT_RESTORED, `${done} (CocoonRestore ${r.metadata.name})`);
    await this.removeHold(r);
    return {};
  }

  /**
   * On the server's set, Suspended and held: the VMs are recorded (so any copy that lands is dropped
   * once its VM runs, or at teardown), every copy made, the restores owed, then the members in the
   * status. Undefined when the server's set is not (yet) as the cache showed it. A plan the set's spec
   * no longer fits undoes the hold and fails, with nothing copied.
   */
  private async copy(r: CocoonRestore, signal: AbortSignal): Promise<CocoonRestoreStatus | undefined> {
    const { namespace, setName, ckName } = names(r);
    const fresh = await unlessNotFound(() => this.deps.client.get<CocoonSet>(COCOONSETS, namespace, setName));
    if (!fresh || fresh.metadata.deletionTimestamp) return undefined;
    const hold = restoreHoldBy(fresh, r.metadata.uid);
    if (!hold) return undefined;
    if (notSuspendedForCopy(fresh)) return undefined;
    // The hold keeps the checkpoint's delete waiting, so it is still there.
    const ck = await unlessNotFound(() =>
      this.deps.client.get<CocoonCheckpoint>(COCOONCHECKPOINTS, namespace, ckName),
    );
    const refusal = checkpointRefusal(ck, ckName) ?? (ck ? refusePlan(fresh, ck) : undefined);
    if (refusal) {
      await this.abandon(r, fresh, hold, refusal);
      return undefined;
    }
    if (!ck) return undefined;
    const plan = planBranch(fresh, ck);
    const targets = plan.map((c) => c.targetVM);
    const set = await this.writeReclaim(fresh, (rec) =>
      recordVMs(rec, fresh.metadata.generation ?? 0, targets),
    );
    const copying = `replacing the :hibernate snapshots of ${plan.length} VMs with CocoonCheckpoint ${ckName}'s`;
    const base = r.status ?? {};
    await this.writeStatus(r, { ...base, reason: REASON_COPYING, message: copying });
    try {
      for (const copy of plan) {
        const write = { namespace, name: setName, uid: r.metadata.uid ?? "" };
        await copyToHibernate(this.deps.registry, copy, write, signal);
      }
    } catch (err) {
      if ((err as Error).name === "AbortError") throw err;
      const message = `${copying}: ${(err as Error).message}; retrying (the set stays Suspended)`;
      this.event(r, "Warning", EVENT_COPY_FAILED, message);
      await this.writeStatus(r, { ...base, reason: REASON_COPY_FAILED, message });
      throw err;
    }
    await this.writeReclaim(set, (rec) => oweRestores(rec, targets));
    const members: RestoredMember[] = plan.map((c) => ({
      vmName: c.targetVM,
      fromVM: c.member.vmName,
      digest: c.member.digest ?? "",
    }));
    const message = `${plan.length} VMs now hold CocoonCheckpoint ${ckName}'s snapshots and are owed a restore`;
    this.event(r, "Normal", EVENT_COPIED, message);
    const updated = await this.writeStatus(r, { ...base, members, reason: REASON_RESUMING, message });
    return updated.status ?? { ...base, members };
  }

  /**
   * The cache does not show this restore's hold: it may lag the write (the set's own event brings
   * it), or someone removed the hold, which ends the restore where it is.
   */
  private async holdMissing(r: CocoonRestore): Promise<Result> {
    const { namespace, setName } = names(r);
    const fresh = await unlessNotFound(() => this.deps.client.get<CocoonSet>(COCOONSETS, namespace, setName));
    if (restoreHoldBy(fresh, r.metadata.uid)) return { requeueAfterMs: CACHE_LAG_MS };
    await this.fail(
      r,
      REASON_HOLD_REMOVED,
      `the ${ANN_RESTORE_HOLD} annotation on CocoonSet ${setName} was removed during the restore; the set is left as it is`,
    );
    return {};
  }

  /** The reclaim record through `change`, compare-and-swap on the set; the set as written. */
  private async writeReclaim(
    cs: CocoonSet,
    change: (record: ReclaimRecord) => ReclaimRecord,
  ): Promise<CocoonSet> {
    const raw = cs.metadata.annotations?.[ANN_HIBERNATE_RECLAIM];
    const value = reclaimPatchValue(raw, change(readReclaim(raw).value));
    if (value === undefined) return cs;
    return this.deps.client.patch<CocoonSet>(
      COCOONSETS,
      cs.metadata.namespace ?? "",
      cs.metadata.name ?? "",
      {
        metadata: {
          resourceVersion: cs.metadata.resourceVersion,
          annotations: { [ANN_HIBERNATE_RECLAIM]: value },
        },
      },
    );
  }

  /** Nothing was copied: the set goes back to its suspend state, the hold goes, the restore fails. */
  private async abandon(r: CocoonRestore, cs: CocoonSet, hold: RestoreHold, refusal: Refusal): Promise<void> {
    if (cs.spec.suspend !== hold.suspend) {
      await this.deps.client.patch<CocoonSet>(
        COCOONSETS,
        cs.metadata.namespace ?? "",
        cs.metadata.name ?? "",
        {
          spec: { suspend: hold.suspend },
        },
      );
    }
    await this.fail(r, refusal.reason, `${refusal.message}; nothing was copied`);
    await this.dropHoldOnServer(cs.metadata.namespace ?? "", cs.metadata.name ?? "", r.metadata.uid ?? "");
  }

  private async refuse(r: CocoonRestore, refusal: Refusal): Promise<Result> {
    await this.writeStatus(r, {
      ...r.status,
      phase: "Failed",
      reason: refusal.reason,
      message: refusal.message,
      completionTime: formatRFC3339(this.deps.clock.now()),
    });
    this.event(r, "Warning", EVENT_REFUSED, refusal.message);
    return {};
  }

  private async fail(r: CocoonRestore, reason: string, message: string): Promise<void> {
    await this.writeStatus(r, {
      ...r.status,
      phase: "Failed",
      reason,
      message,
      completionTime: formatRFC3339(this.deps.clock.now()),
    });
    this.event(r, "Warning", EVENT_FAILED, message);
  }

  /** Removes the restore's hold from its set, compare-and-swap; no call when it holds none. */
  private async removeHold(r: CocoonRestore): Promise<void> {
    const { namespace, setName } = names(r);
    if (!restoreHoldBy(this.deps.view.getCocoonSet(namespace, setName), r.metadata.uid)) return;
    await this.dropHoldOnServer(namespace, setName, r.metadata.uid ?? "");
  }

  private async dropHoldOnServer(namespace: string, setName: string, uid: string): Promise<void> {
    const fresh = await unlessNotFound(() => this.deps.client.get<CocoonSet>(COCOONSETS, namespace, setName));
    if (!fresh || !restoreHoldBy(fresh, uid)) return;
    try {
      await this.deps.client.patch<CocoonSet>(COCOONSETS, namespace, setName, {
        metadata: {
          resourceVersion: fresh.metadata.resourceVersion,
          annotations: { [ANN_RESTORE_HOLD]: null },
        },
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * A restore deleted before it finished: the sets it holds are let go, as they are (a set it
   * suspended stays suspended; resuming it is the user's call, its VMs wake from whatever `:hibernate`
   * holds). A restore cache that has not shown a new restore yet looks the same, and a set event brings
   * that pass: a hold goes only when the API server has no restore of that uid.
   */
  private async releaseOrphanedHolds(req: Request): Promise<Result> {
    const holds = this.deps.view.listCocoonSets(req.namespace).flatMap((cs) => {
      const hold = restoreHoldOf(cs);
      return hold === undefined || hold === "unreadable" || hold.restore !== req.name
        ? []
        : [{ setName: cs.metadata.name ?? "", uid: hold.uid }];
    });
    if (holds.length === 0) return {};
    const current = await this.serverRestore(req.namespace, req.name);
    for (const { setName, uid } of holds) {
      if (current?.metadata.uid === uid) continue;
      await this.dropHoldOnServer(req.namespace, setName, uid);
    }
    return {};
  }

  /**
   * The uids of the namespace's restores that are not Restored or Failed, as cached, and the one the
   * set's hold names when the cache does not show it (just created, or the cache lags) and the API
   * server has it live.
   */
  private async liveRestores(namespace: string, cs: CocoonSet | undefined): Promise<Set<string>> {
    const live = new Set(
      this.deps.view
        .listRestores(namespace)
        .filter((r) => !isFinal(r.status?.phase))
        .map((r) => r.metadata.uid ?? ""),
    );
    const hold = cs ? restoreHoldOf(cs) : undefined;
    if (hold === undefined || hold === "unreadable" || live.has(hold.uid)) return live;
    const holder = await this.serverRestore(namespace, hold.restore);
    if (holder?.metadata.uid === hold.uid && !isFinal(holder.status?.phase)) live.add(hold.uid);
    return live;
  }

  private serverRestore(namespace: string, name: string): Promise<CocoonRestore | undefined> {
    return unlessNotFound(() => this.deps.client.get<CocoonRestore>(COCOONRESTORES, namespace, name));
  }

  private serverCheckpoint(namespace: string, name: string): Promise<CocoonCheckpoint | undefined> {
    return unlessNotFound(() => this.deps.client.get<CocoonCheckpoint>(COCOONCHECKPOINTS, namespace, name));
  }

  /** The set a branched set came from: the set of the checkpoint its from-checkpoint names. */
  private async branchedFrom(cs: CocoonSet | undefined): Promise<string | undefined> {
    const from = cs?.metadata.annotations?.[ANN_FROM_CHECKPOINT];
    if (!cs || from === undefined) return undefined;
    const ck = await this.serverCheckpoint(cs.metadata.namespace ?? "", from);
    return ck?.spec.cocoonSetRef.name;
  }

  /** Patches /status to `next` with its conditions when it differs; the restore as it now is. */
  private async writeStatus(r: CocoonRestore, next: CocoonRestoreStatus): Promise<CocoonRestore> {
    const generation = r.metadata.generation ?? 0;
    const phase: RestorePhase = next.phase ?? r.status?.phase ?? "Pending";
    const conditions = restoreConditions(
      r.status?.conditions ?? [],
      phase,
      next.reason ?? "",
      next.message ?? "",
      generation,
      this.deps.clock.now(),
    );
    const status: CocoonRestoreStatus = { ...next, phase, observedGeneration: generation, conditions };
    if (isDeepStrictEqual(r.status ?? {}, status)) return r;
    const { namespace } = names(r);
    const updated = await this.deps.client.patch<CocoonRestore>(
      COCOONRESTORES,
      namespace,
      r.metadata.name ?? "",
      { status: statusMergePatch(r.status, status) },
      { subresource: "status" },
    );
    const written = { ...r, ...updated, status: updated.status ?? status };
    // Later writes of this pass diff against what this one wrote.
    r.status = written.status;
    return written;
  }

  private event(r: CocoonRestore, type: EventType, reason: string, message: string): void {
    this.deps.events.event(
      { ...r, apiVersion: API_VERSION_V1ALPHA1, kind: KIND_COCOONRESTORE },
      type,
      reason,
      message,
    );
  }

  private setEvent(cs: CocoonSet, type: EventType, reason: string, message: string): void {
    this.deps.events.event({ ...cs, apiVersion: API_VERSION, kind: KIND_COCOONSET }, type, reason, message);
  }
}

function names(r: CocoonRestore): { namespace: string; setName: string; ckName: string } {
  return {
    namespace: r.metadata.namespace ?? "",
    setName: r.spec.cocoonSetRef.name,
    ckName: r.spec.checkpointRef.name,
  };
}
