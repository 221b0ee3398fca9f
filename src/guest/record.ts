// The pod's guest-hooks record (ANN_GUEST_HOOKS): what the hooks did for the VM the pod runs now. It
// names that VM by its vk-cocoon VM ID, which is new after every boot, clone, restore and wake, so a
// record of an earlier VM is simply not this one's. An unreadable record reads as none: the hooks run
// again, which they are written to bear (docs/guest.md).

import { decodeJsonAnnotation } from "../contract/annotationjson.ts";
import type { PodMeta } from "../contract/pod.ts";
import { ANN_GUEST_HOOKS } from "./keys.ts";

/** Where the VM's state came from: another machine's (clone) or its own (wake). */
export type Origin = "clone" | "wake";

export interface PhaseRecord {
  /** Succeeded: every Fail hook succeeded (Ignore hooks may have failed). Failed: a Fail hook failed. */
  result: "Succeeded" | "Failed";
  /** RFC 3339, when the phase ended. */
  at: string;
  /** The policy's metadata.generation the phase ran under: an edit runs a failed phase again. */
  policyGeneration: number;
  /** The hook that failed (or the first Ignore hook that did), by name. */
  hook?: string;
  /** Why, bounded (MAX_REPORTED_OUTPUT): never the command, never the claim's parameters. */
  message?: string;
}

export interface GuestHooksRecord {
  vmID: string;
  origin?: Origin;
  /** PostClone or PostWake (with the built-in refresh), by origin. */
  post?: PhaseRecord;
  /** PostClaim, for the claim named. */
  claim?: PhaseRecord & { name: string };
  preHibernate?: PhaseRecord;
}

const RESULTS = new Set(["Succeeded", "Failed"]);

function phase(value: unknown): PhaseRecord | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (!RESULTS.has(v.result as string) || typeof v.at !== "string" || typeof v.policyGeneration !== "number")
    return undefined;
  return {
    result: v.result as PhaseRecord["result"],
    at: v.at,
    policyGeneration: v.policyGeneration,
    ...(typeof v.hook === "string" ? { hook: v.hook } : {}),
    ...(typeof v.message === "string" ? { message: v.message } : {}),
  };
}

/** The record on the pod; none (vmID "") when absent or unreadable. */
export function readGuestHooksRecord(pod: PodMeta): GuestHooksRecord {
  return decodeJsonAnnotation<GuestHooksRecord>(
    ANN_GUEST_HOOKS,
    pod.metadata.annotations?.[ANN_GUEST_HOOKS],
    () => ({ vmID: "" }),
    (parsed) => {
      if (typeof parsed !== "object" || parsed === null) return "is not an object";
      const p = parsed as Record<string, unknown>;
      if (typeof p.vmID !== "string") return "has no vmID";
      const record: GuestHooksRecord = { vmID: p.vmID };
      if (p.origin === "clone" || p.origin === "wake") record.origin = p.origin;
      const post = phase(p.post);
      if (post) record.post = post;
      const claim = phase(p.claim);
      const claimName = (p.claim as { name?: unknown } | undefined)?.name;
      if (claim && typeof claimName === "string") record.claim = { ...claim, name: claimName };
      const pre = phase(p.preHibernate);
      if (pre) record.preHibernate = pre;
      return record;
    },
  ).value;
}

/** The record as the annotation holds it, keys in a fixed order so an unchanged record is the same string. */
export function encodeGuestHooksRecord(record: GuestHooksRecord): string {
  const ordered = (p: PhaseRecord): PhaseRecord => ({
    result: p.result,
    at: p.at,
    policyGeneration: p.policyGeneration,
    ...(p.hook === undefined ? {} : { hook: p.hook }),
    ...(p.message === undefined ? {} : { message: p.message }),
  });
  return JSON.stringify({
    vmID: record.vmID,
    ...(record.origin ? { origin: record.origin } : {}),
    ...(record.post ? { post: ordered(record.post) } : {}),
    ...(record.claim ? { claim: { name: record.claim.name, ...ordered(record.claim) } } : {}),
    ...(record.preHibernate ? { preHibernate: ordered(record.preHibernate) } : {}),
  });
}
