// The set's status under guest hooks: a member its hooks hold is not counted Ready, the Ready
// condition says why with the counts, the GuestHooks condition reports on sets naming a policy only
// (and goes when the set stops naming one), and a set without a policy keeps the status it had.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet, CocoonSetStatus } from "../../../src/apis/v1/types.ts";
import { computeStatus, statusEqual } from "../../../src/cocoonset/decide/computestatus.ts";
import { GuestHooksGate } from "../../../src/guest/gate.ts";
import {
  CONDITION_GUEST_HOOKS,
  REASON_HOOK_FAILED,
  REASON_HOOKS_PENDING,
  REASON_HOOKS_SUCCEEDED,
  REASON_POLICY_NOT_FOUND,
} from "../../../src/guest/keys.ts";
import { PreHibernateRequests } from "../../../src/guest/requests.ts";
import type { HeldMember } from "../../../src/guestgate.ts";
import { classifyPods } from "../../../src/pass/classify.ts";
import { guestSet, member, phase, policy, SET, SET_UID, SteppingClock } from "./fixture.ts";

const NOW = "2026-01-01T00:00:00Z";

function setOf(replicas: number, opts: { policy?: string } = {}): CocoonSet {
  const cs = guestSet(opts);
  cs.spec.agent.replicas = replicas;
  return cs;
}

function status(cs: CocoonSet, pods: Pod[], held?: Record<string, HeldMember>): CocoonSetStatus {
  return computeStatus(cs, classifyPods(pods, { name: SET, uid: SET_UID }), {
    now: NOW,
    ...(held ? { guestHooks: { held: new Map(Object.entries(held)) } } : {}),
  });
}

const cond = (s: CocoonSetStatus, type: string) => s.conditions?.find((c) => c.type === type);
const pending = (pod: string): HeldMember => ({ reason: REASON_HOOKS_PENDING, message: `pending on ${pod}` });
const failed = (pod: string): HeldMember => ({ reason: REASON_HOOK_FAILED, message: `failed on ${pod}` });

describe("computeStatus with guest hooks", () => {
  const cs = setOf(1);
  const both = () => [member(cs), member(cs, { slot: 1 })];

  it("counts a held member as not Ready, and says why in Ready with the counts", () => {
    const s = status(cs, both(), { "demo-1": pending("demo-1") });
    assert.equal(s.readyAgents, 1);
    assert.equal(s.phase, "Scaling");
    const ready = cond(s, "Ready");
    assert.equal(ready?.status, "False");
    assert.equal(ready?.reason, REASON_HOOKS_PENDING);
    assert.equal(ready?.message, "1/2 agents ready, 0/0 toolboxes ready; pending on demo-1");
  });

  it("a held main leaves the set Pending, Ready reason HookFailed", () => {
    const s = status(cs, both(), { "demo-0": failed("demo-0"), "demo-1": pending("demo-1") });
    assert.equal(s.readyAgents, 0);
    assert.equal(s.phase, "Pending");
    assert.equal(cond(s, "Ready")?.reason, REASON_HOOK_FAILED);
    assert.equal(
      cond(s, "Ready")?.message,
      "0/2 agents ready, 0/0 toolboxes ready; failed on demo-0; and 1 more held by guest hooks",
    );
  });

  it("GuestHooks is True when no member is held, False with the held members' reason otherwise", () => {
    const clear = status(cs, both(), {});
    assert.equal(clear.phase, "Running");
    assert.equal(cond(clear, "Ready")?.status, "True");
    assert.deepEqual(
      [cond(clear, CONDITION_GUEST_HOOKS)?.status, cond(clear, CONDITION_GUEST_HOOKS)?.reason],
      ["True", REASON_HOOKS_SUCCEEDED],
    );
    const held = status(cs, both(), { "demo-1": pending("demo-1") });
    const guest = cond(held, CONDITION_GUEST_HOOKS);
    assert.deepEqual(
      [guest?.status, guest?.reason, guest?.message],
      ["False", REASON_HOOKS_PENDING, "pending on demo-1"],
    );
    assert.equal(guest?.observedGeneration, 1);
  });

  it("reports a failure before a missing policy before hooks still to run, naming at most three", () => {
    const missing: HeldMember = { reason: REASON_POLICY_NOT_FOUND, message: "no policy" };
    const big = setOf(5);
    const pods = Array.from({ length: 6 }, (_, slot) => member(big, { slot }));
    const s = status(big, pods, {
      "demo-0": pending("demo-0"),
      "demo-1": missing,
      "demo-2": failed("demo-2"),
      "demo-3": failed("demo-3"),
      "demo-4": failed("demo-4"),
      "demo-5": failed("demo-5"),
    });
    const guest = cond(s, CONDITION_GUEST_HOOKS);
    assert.equal(guest?.reason, REASON_HOOK_FAILED);
    assert.equal(
      guest?.message,
      "failed on demo-2; failed on demo-3; failed on demo-4; and 3 more held by guest hooks",
    );
    const noFailure = status(big, pods, { "demo-0": pending("demo-0"), "demo-1": missing });
    assert.equal(cond(noFailure, CONDITION_GUEST_HOOKS)?.reason, REASON_POLICY_NOT_FOUND);
  });

  it("drops the GuestHooks condition when the set stops naming a policy", () => {
    const named = status(cs, both(), { "demo-1": pending("demo-1") });
    const unnamed = { ...setOf(1, { policy: "" }), status: named };
    const s = status(unnamed, both());
    assert.equal(cond(s, CONDITION_GUEST_HOOKS), undefined);
    assert.equal(cond(s, "Ready")?.reason, "AllAgentsReady");
    assert.equal(s.readyAgents, 2);
  });

  it("a set without a policy keeps exactly the status it had, through the gate", () => {
    const plain = setOf(1, { policy: "" });
    const pods = [member(plain), member(plain, { slot: 1, ready: false })];
    const before = status(plain, pods);
    const gate = new GuestHooksGate({
      policy: () => policy({ refresh: { afterClone: true } }),
      requests: new PreHibernateRequests(),
      clock: new SteppingClock(),
    });
    const answer = gate.heldMembers({ ...plain, status: before }, pods);
    assert.equal(answer.named, false);
    const after = status(
      { ...plain, status: before },
      pods,
      answer.named ? Object.fromEntries(answer.held) : undefined,
    );
    assert.deepEqual(after, before);
    assert.ok(statusEqual(before, after), "no status write");
    assert.equal(cond(after, CONDITION_GUEST_HOOKS), undefined);
    assert.equal(cond(after, "Ready")?.reason, "AgentsNotReady");
    assert.equal(cond(after, "Ready")?.message, "1/2 agents ready, 0/0 toolboxes ready");
  });

  it("the gate's own answer for a named policy holds the pending member", () => {
    const gate = new GuestHooksGate({
      policy: () => policy({ refresh: { afterClone: true } }),
      requests: new PreHibernateRequests(),
      clock: new SteppingClock(),
    });
    const pods = [
      member(cs, { record: { vmID: "vm-demo-0", origin: "clone", post: phase("Succeeded") } }),
      member(cs, { slot: 1 }),
    ];
    const answer = gate.heldMembers(cs, pods);
    const s = status(cs, pods, Object.fromEntries(answer.held));
    assert.equal(s.readyAgents, 1);
    assert.equal(cond(s, CONDITION_GUEST_HOOKS)?.reason, REASON_HOOKS_PENDING);
    assert.match(cond(s, "Ready")?.message ?? "", /^1\/2 agents ready, 0\/0 toolboxes ready; .*demo-1/);
  });
});
