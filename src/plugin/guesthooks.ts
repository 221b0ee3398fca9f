// What `status` shows of a set's guest hooks (docs/guest.md): the policy it names, its GuestHooks
// condition, and per member what the hooks did for the VM the pod runs now, read from the pod's record.
// A record names its VM by vk-cocoon's VM ID, new after every boot, clone, restore and wake, so a
// record of another VM says nothing of this one: its hooks are pending. Shown only for sets naming a
// policy, so every other set prints as it always did.

import type { CocoonSet } from "../apis/v1/types.ts";
import { guestPolicyName, hookable, vmIDOf } from "../guest/decide.ts";
import { CONDITION_GUEST_HOOKS, MAX_REPORTED_OUTPUT } from "../guest/keys.ts";
import { type Origin, type PhaseRecord, readGuestHooksRecord } from "../guest/record.ts";
import { formatTable } from "./output.ts";
import type { Member } from "./setstate.ts";

/** A hook's message in the table: one line, cut here (-o wide and -o json|yaml: at the record's bound). */
const TABLE_MESSAGE_CHARS = 80;

/**
 * Where a member's hooks stand: `recorded` (the record is this VM's), `pending` (none is: the hooks
 * owe this VM their run), `not-hookable` (hooks run in managed Linux guests only), `no-pod`.
 */
export type MemberHooksState = "recorded" | "pending" | "not-hookable" | "no-pod";

export interface MemberHooks {
  pod: string;
  state: MemberHooksState;
  /** The VM the pod runs now, when it has one. */
  vmID?: string;
  origin?: Origin;
  post?: PhaseRecord;
  claim?: PhaseRecord & { name: string };
  preHibernate?: PhaseRecord;
}

export interface GuestHooksView {
  policy: string;
  /** The set's GuestHooks condition; undefined until the operator reports one. */
  condition?: { status: string; reason: string; message: string };
  /** One per member, in the order of the members given. */
  members: MemberHooks[];
}

/** The set's hooks, or undefined when it names no guest policy. */
export function guestHooksView(cs: CocoonSet, members: readonly Member[]): GuestHooksView | undefined {
  const policy = guestPolicyName(cs);
  if (policy === "") return undefined;
  const c = cs.status?.conditions?.find((cond) => cond.type === CONDITION_GUEST_HOOKS);
  return {
    policy,
    ...(c ? { condition: { status: c.status, reason: c.reason ?? "", message: c.message ?? "" } } : {}),
    members: members.map(memberHooks),
  };
}

function memberHooks(member: Member): MemberHooks {
  const pod = member.pod;
  if (!pod) return { pod: member.podName, state: "no-pod" };
  const vmID = vmIDOf(pod);
  const id = vmID === "" ? {} : { vmID };
  if (!hookable(pod)) return { pod: member.podName, state: "not-hookable", ...id };
  const record = readGuestHooksRecord(pod);
  if (vmID === "" || record.vmID !== vmID) return { pod: member.podName, state: "pending", ...id };
  return {
    pod: member.podName,
    state: "recorded",
    ...id,
    ...(record.origin ? { origin: record.origin } : {}),
    ...(record.post ? { post: bounded(record.post) } : {}),
    ...(record.claim ? { claim: bounded(record.claim) } : {}),
    ...(record.preHibernate ? { preHibernate: bounded(record.preHibernate) } : {}),
  };
}

/** The phase with its message held to the record's bound, whoever wrote the annotation. */
function bounded<P extends PhaseRecord>(phase: P): P {
  return phase.message === undefined ? phase : { ...phase, message: cut(phase.message, MAX_REPORTED_OUTPUT) };
}

/** One line (hook output may hold newlines), at most `max` characters, the cut marked. */
function cut(text: string, max: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

/**
 * The hook to name for a member: the one that failed under Fail (post, then claim, then
 * pre-hibernate), else the first that failed under Ignore, which the record keeps beside a success.
 */
function namedHook(m: MemberHooks): { hook: string; message: string } | undefined {
  const phases = [m.post, m.claim, m.preHibernate].filter((p): p is PhaseRecord => p !== undefined);
  const failed = phases.find((p) => p.result === "Failed");
  if (failed) return { hook: failed.hook ?? "-", message: failed.message ?? "" };
  const ignored = phases.find((p) => p.hook !== undefined);
  return ignored ? { hook: `${ignored.hook} (ignored)`, message: ignored.message ?? "" } : undefined;
}

/** The header lines: the policy, and the GuestHooks condition with its reason and message. */
export function guestHooksHeader(view: GuestHooksView): [string, string][] {
  const c = view.condition;
  return [
    ["Guest policy", view.policy],
    [
      "Guest hooks",
      c ? `${c.status} (${c.reason})${c.message ? `: ${c.message}` : ""}` : "(not reported yet)",
    ],
  ];
}

const STATE_SHOWN: Record<Exclude<MemberHooksState, "recorded">, string> = {
  pending: "pending",
  "not-hookable": "n/a",
  "no-pod": "-",
};

/** One line per member: origin (or why none), each phase's result, the hook that failed and why. */
export function guestHooksTable(view: GuestHooksView, wide: boolean): string {
  const result = (p: PhaseRecord | undefined) => p?.result ?? "-";
  const rows = view.members.map((m) => {
    const named = namedHook(m);
    return [
      m.pod,
      m.state === "recorded" ? (m.origin ?? "-") : STATE_SHOWN[m.state],
      result(m.post),
      m.claim ? `${m.claim.name}: ${m.claim.result}` : "-",
      result(m.preHibernate),
      named?.hook ?? "-",
      named?.message ? cut(named.message, wide ? MAX_REPORTED_OUTPUT : TABLE_MESSAGE_CHARS) : "-",
    ];
  });
  const headers = ["pod", "origin", "post", "claim", "pre-hibernate", "hook", "message"];
  return formatTable(headers, rows);
}
