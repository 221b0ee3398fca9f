// The guest gate the pass reads (held members, whether a VM may hibernate) and the pass's group
// verdict over it: an owed pre-hibernate hook is asked for and queued once, and a group is refused
// while any VM's hook failed, waits while any runs, and proceeds only when every VM may go.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonGuestPolicy } from "../../../src/apis/v1alpha1/types.ts";
import { GuestHooksGate } from "../../../src/guest/gate.ts";
import {
  FAILED_HOOK_RETRY_MS,
  REASON_HOOKS_PENDING,
  REASON_POLICY_NOT_FOUND,
} from "../../../src/guest/keys.ts";
import { PreHibernateRequests } from "../../../src/guest/requests.ts";
import type { GuestGate, HibernateVerdict } from "../../../src/guestgate.ts";
import type { Pass } from "../../../src/pass/pass.ts";
import { preHibernateGate } from "../../../src/pass/prehibernate.ts";
import { guestSet, hook, member, NS, phase, policy, SteppingClock, T0 } from "./fixture.ts";

function gate(p: CocoonGuestPolicy | undefined) {
  const requests = new PreHibernateRequests();
  const clock = new SteppingClock();
  const g = new GuestHooksGate({
    policy: (namespace, name) => (p && namespace === NS && name === p.metadata.name ? p : undefined),
    requests,
    clock,
  });
  const queued: string[] = [];
  g.enqueue = (namespace, name) => queued.push(`${namespace}/${name}`);
  return { gate: g, requests, clock, queued };
}

const gated = policy({ refresh: { afterClone: true }, hooks: [hook("flush", ["PreHibernate"])] });

describe("GuestHooksGate.heldMembers", () => {
  it("names nothing for a set without a policy", () => {
    const cs = guestSet({ policy: "" });
    const { held, named } = gate(gated).gate.heldMembers(cs, [member(cs)]);
    assert.equal(named, false);
    assert.equal(held.size, 0);
  });

  it("holds the members whose hooks have not succeeded, by pod name", () => {
    const cs = guestSet();
    const done = member(cs, {
      slot: 1,
      record: { vmID: "vm-demo-1", origin: "clone", post: phase("Succeeded") },
    });
    const notReady = member(cs, { slot: 2, ready: false });
    const { held, named } = gate(gated).gate.heldMembers(cs, [member(cs), done, notReady]);
    assert.equal(named, true);
    assert.deepEqual([...held.keys()], ["demo-0"]);
    assert.equal(held.get("demo-0")?.reason, REASON_HOOKS_PENDING);
  });

  it("holds every Ready member of a set whose policy is missing", () => {
    const cs = guestSet();
    const { held, named } = gate(undefined).gate.heldMembers(cs, [member(cs), member(cs, { slot: 1 })]);
    assert.equal(named, true);
    assert.deepEqual(
      [...held.values()].map((h) => h.reason),
      [REASON_POLICY_NOT_FOUND, REASON_POLICY_NOT_FOUND],
    );
  });
});

describe("GuestHooksGate.beforeHibernate", () => {
  it("asks for an owed hook and queues the pod once, however often it is asked", () => {
    const cs = guestSet();
    const g = gate(gated);
    const pod = member(cs);
    for (let i = 0; i < 3; i++) {
      const verdict = g.gate.beforeHibernate(cs, pod);
      assert.equal(verdict.action, "wait");
    }
    assert.deepEqual(g.queued, ["ns/demo-0"]);
    assert.equal(g.requests.has(pod, "vm-demo-0"), true);
  });

  it("asks again for the next VM of the same pod", () => {
    const cs = guestSet();
    const g = gate(gated);
    g.gate.beforeHibernate(cs, member(cs));
    g.gate.beforeHibernate(cs, member(cs, { vmID: "vm-demo-0-b" }));
    assert.deepEqual(g.queued, ["ns/demo-0", "ns/demo-0"]);
  });

  it("proceeds without asking for a set without a policy, or once the hook succeeded", () => {
    const g = gate(gated);
    const none = guestSet({ policy: "" });
    assert.deepEqual(g.gate.beforeHibernate(none, member(none)), { action: "proceed" });
    const cs = guestSet();
    const done = member(cs, { record: { vmID: "vm-demo-0", preHibernate: phase("Succeeded") } });
    assert.deepEqual(g.gate.beforeHibernate(cs, done), { action: "proceed" });
    assert.deepEqual(g.queued, []);
    assert.equal(g.requests.size, 0);
  });

  it("refuses a failed hook until it is due, without queueing it", () => {
    const cs = guestSet();
    const g = gate(gated);
    g.clock.current = T0 + 1000;
    const failed = member(cs, {
      record: { vmID: "vm-demo-0", preHibernate: phase("Failed", { hook: "flush", message: "no" }) },
    });
    const verdict = g.gate.beforeHibernate(cs, failed);
    assert.equal(verdict.action, "refused");
    assert.equal(verdict.action === "refused" ? verdict.retryAfterMs : 0, FAILED_HOOK_RETRY_MS - 1000);
    assert.deepEqual(g.queued, []);
  });
});

/** A pass over a gate that answers each pod by name. */
function passWith(verdicts: Record<string, HibernateVerdict>) {
  const asked: string[] = [];
  const guest: GuestGate = {
    heldMembers: () => ({ named: false, held: new Map() }),
    beforeHibernate: (_cs, pod) => {
      asked.push(pod.metadata.name ?? "");
      return verdicts[pod.metadata.name ?? ""] ?? { action: "proceed" };
    },
  };
  const pass = { cs: guestSet(), deps: { guest } } as unknown as Pass;
  return { pass, asked };
}

const pods = (cs: CocoonSet, n: number): Pod[] =>
  Array.from({ length: n }, (_, slot) => member(cs, { slot }));

describe("preHibernateGate (the group)", () => {
  const cs = guestSet();
  const wait = (m: string): HibernateVerdict => ({ action: "wait", message: m });
  const refused = (m: string, ms: number): HibernateVerdict => ({
    action: "refused",
    message: m,
    retryAfterMs: ms,
  });

  it("proceeds when every VM may go, or without guest hooks", () => {
    assert.deepEqual(preHibernateGate(passWith({}).pass, pods(cs, 2)), { action: "proceed" });
    const off = { cs, deps: {} } as unknown as Pass;
    assert.deepEqual(preHibernateGate(off, pods(cs, 2)), { action: "proceed" });
  });

  it("waits while any VM's hook is owed, and asks every VM (each owed hook is queued)", () => {
    const { pass, asked } = passWith({ "demo-1": wait("w1"), "demo-2": wait("w2") });
    assert.deepEqual(preHibernateGate(pass, pods(cs, 3)), wait("w1"));
    assert.deepEqual(asked, ["demo-0", "demo-1", "demo-2"]);
  });

  it("is refused when any VM's hook failed, with the soonest retry, over any wait", () => {
    const { pass, asked } = passWith({
      "demo-0": wait("w0"),
      "demo-1": refused("late", 9000),
      "demo-2": refused("soon", 2000),
      "demo-3": refused("later", 5000),
    });
    assert.deepEqual(preHibernateGate(pass, pods(cs, 4)), refused("soon", 2000));
    assert.equal(asked.length, 4);
  });
});
