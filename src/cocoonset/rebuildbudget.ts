// The writes of the rebuild budget around the pure rules of decide/rebuildrules.ts: a pod that needs
// a rebuild (drifted, or a terminal sub-agent or toolbox) is deleted for recreate with backoff, the
// history persisted FIRST so a failed delete cannot bypass the gate; once the budget is spent the pod
// is kept and dead-lettered at the set's generation, until a spec edit.

import type { Pod } from "../apis/core.ts";
import { ANN_DEAD_LETTER, ANN_REBUILD_HISTORY } from "../contract/keys.ts";
import { isPodFailed } from "../contract/pod.ts";
import { subagentDeadLetterTotal, subagentRebuildTotal } from "../metrics/cocoon.ts";
import { type Pass, REQUEUE_POLL_MS } from "../pass/pass.ts";
import {
  deletePodAsRead,
  patchPodAnnotations,
  patchSetAnnotations,
  readPodFromServer,
  setEvent,
} from "../pass/writes.ts";
import {
  deadLetterValue,
  desiredPodNames,
  encodeRebuildHistory,
  MAX_REBUILD_ATTEMPTS,
  missingPodParked,
  type RebuildDecision,
  type RebuildHistory,
  readRebuildHistory,
  rebuildDecision,
  recordDeadLetter,
  recordRebuild,
} from "./decide/rebuildrules.ts";

export const EVENT_REBUILDING = "SubAgentRebuilding";
export const EVENT_DEAD_LETTER = "SubAgentDeadLetter";

/** The set's rebuild history as this pass last wrote it; unreadable text reads as empty (warn). */
export function rebuildHistory(pass: Pass): RebuildHistory {
  const decoded = readRebuildHistory(pass.cs.metadata.annotations?.[ANN_REBUILD_HISTORY], pass.name);
  if (decoded.warning) pass.deps.log.warn({ cocoonset: `${pass.namespace}/${pass.name}` }, decoded.warning);
  return decoded.value;
}

/** A missing pod whose slot is dead-lettered at this generation stays uncreated. */
export function isMissingPodParked(pass: Pass, podName: string): boolean {
  return missingPodParked(rebuildHistory(pass), podName, pass.generation);
}

function persistHistory(pass: Pass, history: RebuildHistory): Promise<boolean> {
  return patchSetAnnotations(pass, {
    [ANN_REBUILD_HISTORY]: encodeRebuildHistory(history, desiredPodNames(pass.cs)),
  });
}

export interface RebuildNeed {
  /** The pod no longer matches the spec (a legacy `"true"` dead-letter holds only until it does). */
  drifted: boolean;
  /** For the log: the drift, or the pod's failure. */
  reason: string;
}

/**
 * Applies the budget to a pod that needs a rebuild and returns the decision taken. A wait lowers the
 * pass's requeue-after; any write marks the pass changed.
 */
export async function spendRebuildBudget(pass: Pass, pod: Pod, need: RebuildNeed): Promise<RebuildDecision> {
  const podName = pod.metadata.name ?? "";
  const history = rebuildHistory(pass);
  const now = pass.deps.clock.now();
  const { drifted, reason } = need;
  const decision = rebuildDecision(
    history,
    podName,
    now,
    pass.generation,
    pod.metadata.annotations?.[ANN_DEAD_LETTER],
    drifted,
  );
  const labels = { namespace: pass.namespace, cocoonset: pass.name };
  const logFields = { cocoonset: `${pass.namespace}/${pass.name}`, pod: podName, reason };
  switch (decision.action) {
    case "parked":
      return decision;
    case "wait":
      pass.requeueWithin(decision.waitMs);
      return decision;
    case "dead-letter":
      await persistHistory(pass, recordDeadLetter(history, podName, pass.generation));
      await patchPodAnnotations(pass, pod, { [ANN_DEAD_LETTER]: deadLetterValue(pass.generation) });
      pass.changed = true;
      subagentDeadLetterTotal.inc(labels);
      setEvent(
        pass,
        "Warning",
        EVENT_DEAD_LETTER,
        `${podName} exhausted ${MAX_REBUILD_ATTEMPTS} rebuilds; left in dead-letter until the spec changes`,
      );
      pass.deps.log.warn(logFields, "rebuild budget spent, pod dead-lettered");
      return decision;
    case "rebuild-now": {
      // The delete is irreversible: a cache that lags may show a pod the server has since replaced,
      // or a failure vk-cocoon has since lifted. The server's pod must be this one, still in need.
      const fresh = await readPodFromServer(pass, pod);
      if (!fresh || !(drifted || isPodFailed(fresh))) {
        pass.requeueWithin(REQUEUE_POLL_MS);
        return { action: "wait", waitMs: REQUEUE_POLL_MS };
      }
      await persistHistory(pass, recordRebuild(history, podName, decision.attempt, now));
      // The pod as checked: one replaced or recovered since the read is not deleted.
      if (!(await deletePodAsRead(pass, fresh))) {
        pass.requeueWithin(REQUEUE_POLL_MS);
        return { action: "wait", waitMs: REQUEUE_POLL_MS };
      }
      pass.changed = true;
      subagentRebuildTotal.inc(labels);
      setEvent(
        pass,
        "Normal",
        EVENT_REBUILDING,
        `${podName} attempt ${decision.attempt}/${MAX_REBUILD_ATTEMPTS}`,
      );
      pass.deps.log.info({ ...logFields, attempt: decision.attempt }, "deleted pod for rebuild");
      return decision;
    }
  }
}
