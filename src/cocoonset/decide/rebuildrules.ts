// The rebuild budget of steps 7, 11, 12 and 13: a drifted pod, or a terminal
// sub-agent or toolbox, is deleted for recreate with backoff 0 / 1 / 5 / 30 s, at most 4 times, then
// kept with `dead-letter: "<generation>"` until a spec edit. The count lives on the CocoonSet's
// `rebuild-history` annotation, keyed by pod name, so it survives the pod delete.

import type { CocoonSet } from "../../apis/v1/types.ts";
import { type Decoded, decodeJsonAnnotation } from "../../contract/annotationjson.ts";
import { TRUE } from "../../contract/keys.ts";
import { byteOrder } from "../../contract/order.ts";
import { agentPodName, toolboxPodName } from "../../contract/vmname.ts";
import { formatRFC3339Nano, parseRFC3339 } from "../../rfc3339.ts";

export const MAX_REBUILD_ATTEMPTS = 4;

export interface RebuildEntry {
  count: number;
  /** RFC 3339 time of the last rebuild delete. */
  lastDeleted: string;
  /**
   * The generation the pod was dead-lettered at, so a dead-lettered pod that goes missing is not
   * recreated until a spec edit (the pod's own annotation goes with it). Go readers ignore it.
   */
  deadLetter?: number;
}

/** Keyed by pod name. */
export type RebuildHistory = Map<string, RebuildEntry>;

/**
 * Reads the annotation. Older Go operators keyed entries by slot number ("1"); those keys become the
 * agent pod name `<cs>-<slot>`. Missing, `null` or corrupt text reads as an empty, writable history.
 */
export function readRebuildHistory(raw: string | undefined, csName: string): Decoded<RebuildHistory> {
  return decodeJsonAnnotation(
    "rebuild-history",
    raw,
    () => new Map(),
    (parsed) => {
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
        return "is not a JSON object";
      const history: RebuildHistory = new Map();
      for (const [key, entry] of Object.entries(parsed)) {
        const decoded = decodeEntry(entry);
        if (!decoded) return `entry ${JSON.stringify(key)} is malformed`;
        history.set(/^\d+$/.test(key) ? agentPodName(csName, Number(key)) : key, decoded);
      }
      return history;
    },
  );
}

function decodeEntry(entry: unknown): RebuildEntry | undefined {
  if (entry === null) return { count: 0, lastDeleted: "" };
  if (typeof entry !== "object" || Array.isArray(entry)) return undefined;
  const { count, lastDeleted, deadLetter } = entry as Record<string, unknown>;
  if (count !== undefined && !isInteger(count)) return undefined;
  if (lastDeleted !== undefined && typeof lastDeleted !== "string") return undefined;
  if (deadLetter !== undefined && !isInteger(deadLetter)) return undefined;
  const decoded: RebuildEntry = { count: count ?? 0, lastDeleted: lastDeleted ?? "" };
  if (deadLetter !== undefined) decoded.deadLetter = deadLetter;
  return decoded;
}

function isInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value);
}

/** The pod names the spec names: agents `<cs>-0..replicas` and one per toolbox. */
export function desiredPodNames(cs: CocoonSet): Set<string> {
  const names = new Set<string>();
  const replicas = cs.spec.agent.replicas ?? 0;
  const csName = cs.metadata.name ?? "";
  for (let slot = 0; slot <= replicas; slot++) names.add(agentPodName(csName, slot));
  for (const toolbox of cs.spec.toolboxes ?? []) names.add(toolboxPodName(csName, toolbox.name));
  return names;
}

/** JSON for the annotation, keys sorted, dropping entries for pods the spec no longer names. */
export function encodeRebuildHistory(history: RebuildHistory, desired: ReadonlySet<string>): string {
  const out: Record<string, RebuildEntry> = {};
  for (const podName of [...history.keys()].filter((name) => desired.has(name)).sort(byteOrder)) {
    const entry = history.get(podName);
    if (!entry) continue;
    const encoded: RebuildEntry = { count: entry.count, lastDeleted: entry.lastDeleted || GO_ZERO_TIME };
    if (entry.deadLetter !== undefined) encoded.deadLetter = entry.deadLetter;
    out[podName] = encoded;
  }
  return JSON.stringify(out);
}

// encoding/json writes a zero time.Time this way; Go readers need a parseable time.
const GO_ZERO_TIME = "0001-01-01T00:00:00Z";

/** The wait before the next rebuild, by the number of rebuilds already done. */
export function rebuildBackoffMs(priorCount: number): number {
  if (priorCount <= 0) return 0;
  if (priorCount === 1) return 1_000;
  if (priorCount === 2) return 5_000;
  return 30_000;
}

/** The pod annotation value that parks a pod at this generation. */
export function deadLetterValue(generation: number): string {
  return String(generation);
}

/**
 * Whether the pod's dead-letter still holds: only a new generation lifts it. The older Go value
 * `"true"` carries no generation; as the Go operator did, it holds until the pod drifts from the spec
 * (which a spec edit causes).
 */
export function isDeadLettered(value: string | undefined, generation: number, drifted: boolean): boolean {
  if (value === undefined || value === "") return false;
  if (value === TRUE) return !drifted;
  return value === deadLetterValue(generation);
}

export type RebuildDecision =
  /** Persist `recordRebuild(history, podName, attempt, now)` first, then delete the pod. */
  | { action: "rebuild-now"; attempt: number }
  /** In backoff: requeue after waitMs. */
  | { action: "wait"; waitMs: number }
  /** Budget spent: annotate the pod `dead-letter: deadLetterValue(generation)` and keep it. */
  | { action: "dead-letter" }
  /** Already dead-lettered at this generation: leave the pod alone. */
  | { action: "parked" };

/**
 * The budget's verdict for a pod that needs a rebuild (drifted, or a terminal sub-agent or toolbox).
 * A lifted dead-letter starts a fresh budget: the spec edit is the remedy the budget waited for.
 */
export function rebuildDecision(
  history: RebuildHistory,
  podName: string,
  now: number,
  generation: number,
  deadLetter: string | undefined,
  drifted: boolean,
): RebuildDecision {
  if (isDeadLettered(deadLetter, generation, drifted)) return { action: "parked" };
  const lifted = deadLetter !== undefined && deadLetter !== "";
  const entry = lifted ? undefined : history.get(podName);
  const count = entry?.count ?? 0;
  if (count >= MAX_REBUILD_ATTEMPTS) return { action: "dead-letter" };
  const lastDeleted = parseRFC3339(entry?.lastDeleted) ?? Number.NEGATIVE_INFINITY;
  const remaining = rebuildBackoffMs(count) - (now - lastDeleted);
  if (remaining > 0) return { action: "wait", waitMs: remaining };
  return { action: "rebuild-now", attempt: count + 1 };
}

/** The history to persist before the rebuild delete. */
export function recordRebuild(
  history: RebuildHistory,
  podName: string,
  attempt: number,
  now: number,
): RebuildHistory {
  const next = new Map(history);
  next.set(podName, { count: attempt, lastDeleted: formatRFC3339Nano(now) });
  return next;
}

/** The history to persist with a dead-letter, so the slot stays parked should its pod go missing. */
export function recordDeadLetter(
  history: RebuildHistory,
  podName: string,
  generation: number,
): RebuildHistory {
  const entry = history.get(podName) ?? { count: MAX_REBUILD_ATTEMPTS, lastDeleted: "" };
  const next = new Map(history);
  next.set(podName, { ...entry, deadLetter: generation });
  return next;
}

/**
 * Whether a missing pod stays uncreated: its slot was dead-lettered at this generation (a missing main
 * then reports Phase=Failed; a missing sub-agent or toolbox is skipped).
 */
export function missingPodParked(history: RebuildHistory, podName: string, generation: number): boolean {
  return history.get(podName)?.deadLetter === generation;
}

/** The history without a pod's entry (its budget starts over). */
export function forgetRebuild(history: RebuildHistory, podName: string): RebuildHistory {
  const next = new Map(history);
  next.delete(podName);
  return next;
}

/** The smallest pending wait, for the pass's requeueAfter (0 when nothing waits). */
export function smallestWait(decisions: Iterable<RebuildDecision>): number {
  let smallest = 0;
  for (const decision of decisions) {
    if (decision.action === "wait" && (smallest === 0 || decision.waitMs < smallest))
      smallest = decision.waitMs;
  }
  return smallest;
}
