// Guest hooks' pure decisions: which pods hooks act in, clone or wake by the owner mark, the built-in
// refresh's exact guest commands, the order and defaults of what a VM owes, when each phase is due,
// which members are held from Ready, and whether a VM may hibernate yet.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ANN_HIBERNATE, ANN_MANAGED, ANN_VM_ID, TRUE } from "../../../src/contract/keys.ts";
import {
  dueWork,
  hookable,
  hostnameFor,
  memberGate,
  originFromMark,
  ownerMark,
  postRuns,
  preHibernateVerdict,
  refreshCommand,
} from "../../../src/guest/decide.ts";
import {
  FAILED_HOOK_RETRY_MS,
  REASON_HOOK_FAILED,
  REASON_HOOKS_PENDING,
  REASON_POLICY_NOT_FOUND,
} from "../../../src/guest/keys.ts";
import type { GuestHooksRecord } from "../../../src/guest/record.ts";
import { guestSet, hook, member, phase, policy, SET_UID, T0, withOS } from "./fixture.ts";

const cs = guestSet();
const VM = "vm-demo-0";

describe("hookable", () => {
  it("takes managed Linux guests only", () => {
    assert.equal(hookable(member(cs)), true, "no os annotation: Linux");
    assert.equal(hookable(withOS(member(cs), "linux")), true);
    for (const os of ["windows", "macos", "android"]) {
      assert.equal(hookable(withOS(member(cs), os)), false, os);
    }
    assert.equal(hookable(member(cs, { annotations: { [ANN_MANAGED]: "false" } })), false, "static VM");
    const unmarked = member(cs);
    delete unmarked.metadata.annotations?.[ANN_MANAGED];
    assert.equal(hookable(unmarked), false, "no managed annotation");
  });
});

describe("originFromMark", () => {
  const own = ownerMark("vk-ns-demo-1", SET_UID);
  it("is a wake when the guest carries its own VM's mark, a clone otherwise", () => {
    assert.equal(own, `vk-ns-demo-1@${SET_UID}`);
    assert.equal(originFromMark(own, own), "wake");
    assert.equal(originFromMark(`${own}\n`, own), "wake", "cat's trailing newline");
    assert.equal(originFromMark(`vk-ns-demo-0@${SET_UID}`, own), "clone", "forked from the main");
    assert.equal(originFromMark("vk-ns-demo-1@other-set", own), "clone", "another set's checkpoint");
    assert.equal(originFromMark("", own), "clone", "no mark: a first boot");
  });
});

describe("refreshCommand", () => {
  const now = Date.parse("2026-01-01T00:00:00.999Z");
  const seconds = Math.floor(now / 1000);
  it("after a clone: the clock and the randomness first, then a new identity, as one sh -c line", () => {
    // Copies share their random state: an identity made before the mix comes out the same in each.
    assert.deepEqual(refreshCommand("clone", "demo-1", now), [
      "sh",
      "-c",
      `date -s @${seconds} && cat > /dev/urandom && ` +
        "rm -f /etc/machine-id && systemd-machine-id-setup && hostnamectl set-hostname demo-1 && " +
        "rm -f /etc/ssh/ssh_host_* && ssh-keygen -A",
    ]);
  });

  it("after a wake: only the clock and the randomness", () => {
    assert.deepEqual(refreshCommand("wake", "demo-1", now), [
      "sh",
      "-c",
      `date -s @${seconds} && cat > /dev/urandom`,
    ]);
  });

  it("cuts the hostname to one 63-character DNS label without a trailing '-' or '.'", () => {
    const long = `pool-${"a".repeat(70)}`;
    assert.equal(hostnameFor(long), long.slice(0, 63));
    assert.equal(hostnameFor(long).length, 63);
    const dashAt63 = `${"b".repeat(61)}-.x-tail`;
    assert.equal(hostnameFor(dashAt63), "b".repeat(61));
    assert.match(
      refreshCommand("clone", long, now)[2] ?? "",
      new RegExp(` set-hostname ${long.slice(0, 63)} `),
    );
  });
});

describe("postRuns", () => {
  const p = policy({
    refresh: { afterClone: true, afterWake: false },
    hooks: [
      hook("a", ["PostClone", "PostWake"]),
      hook("b", ["PostClone"], { timeoutSeconds: 5, failurePolicy: "Ignore", retries: 3, backoffSeconds: 1 }),
      hook("c", ["PreHibernate"]),
    ],
  });
  it("runs the refresh first, then the point's hooks in the policy's order", () => {
    assert.deepEqual(
      postRuns(p, "clone").map((r) => `${r.name}/${r.point}`),
      ["refresh/PostClone", "a/PostClone", "b/PostClone"],
    );
    assert.deepEqual(
      postRuns(p, "wake").map((r) => `${r.name}/${r.point}`),
      ["a/PostWake"],
      "afterWake false: no refresh",
    );
  });

  it("fills in the defaults: 30 s, Fail, no retries, 2 s backoff; the refresh has its own", () => {
    const [refresh, a, b] = postRuns(p, "clone");
    assert.deepEqual(
      { ...refresh, command: undefined },
      {
        name: "refresh",
        point: "PostClone",
        command: undefined,
        timeoutMs: 60_000,
        failurePolicy: "Fail",
        retries: 2,
        backoffMs: 2000,
      },
    );
    assert.deepEqual(a, {
      name: "a",
      point: "PostClone",
      command: ["sh", "-c", "run-a"],
      timeoutMs: 30_000,
      failurePolicy: "Fail",
      retries: 0,
      backoffMs: 2000,
    });
    assert.deepEqual([b?.timeoutMs, b?.failurePolicy, b?.retries, b?.backoffMs], [5000, "Ignore", 3, 1000]);
  });
});

describe("dueWork", () => {
  const all = policy({
    refresh: { afterClone: true },
    hooks: [hook("login", ["PostClaim"]), hook("flush", ["PreHibernate"])],
  });
  const claimed = guestSet({ claim: "c1" });
  const rec = (extra: Partial<GuestHooksRecord> = {}): GuestHooksRecord => ({ vmID: VM, ...extra });

  it("runs post, then claim, then a requested pre-hibernate", () => {
    const pod = member(claimed);
    assert.equal(dueWork(pod, claimed, all, rec(), true, T0), "post");
    const posted = rec({ origin: "clone", post: phase("Succeeded") });
    assert.equal(dueWork(pod, claimed, all, posted, true, T0), "claim");
    const claimedRec = { ...posted, claim: { name: "c1", ...phase("Succeeded") } };
    assert.equal(dueWork(pod, claimed, all, claimedRec, true, T0), "preHibernate");
    assert.equal(dueWork(pod, claimed, all, claimedRec, false, T0), undefined, "not requested");
    const allDone = { ...claimedRec, preHibernate: phase("Succeeded") };
    assert.equal(dueWork(pod, claimed, all, allDone, true, T0), undefined);
  });

  it("runs a claim's hooks again for a new claim", () => {
    const pod = member(claimed);
    const other = rec({ post: phase("Succeeded"), claim: { name: "c0", ...phase("Succeeded") } });
    assert.equal(dueWork(pod, claimed, all, other, false, T0), "claim");
  });

  it("owes nothing to a record of another VM, an unhookable pod, or a pod without a VM", () => {
    assert.equal(dueWork(member(claimed), claimed, all, { vmID: "vm-earlier" }, true, T0), undefined);
    assert.equal(dueWork(withOS(member(claimed), "windows"), claimed, all, rec(), true, T0), undefined);
    const noVM = member(claimed, { annotations: { [ANN_VM_ID]: "" } });
    assert.equal(dueWork(noVM, claimed, all, { vmID: "" }, true, T0), undefined);
  });

  it("runs post and claim only on a Ready VM; a requested pre-hibernate does not wait for Ready", () => {
    const notReady = member(claimed, { ready: false });
    assert.equal(dueWork(notReady, claimed, all, rec(), false, T0), undefined);
    assert.equal(dueWork(notReady, claimed, all, rec({ post: phase("Succeeded") }), false, T0), undefined);
    assert.equal(dueWork(notReady, claimed, all, rec(), true, T0), "preHibernate");
    const hibernating = member(claimed, { annotations: { [ANN_HIBERNATE]: TRUE } });
    assert.equal(dueWork(hibernating, claimed, all, rec(), false, T0), undefined);
  });

  it("holds the claim's hooks until post succeeded", () => {
    const pod = member(claimed);
    const failed = rec({ post: phase("Failed", { hook: "refresh" }) });
    assert.equal(dueWork(pod, claimed, all, failed, false, T0 + 1000), undefined);
    const claimOnly = policy({ hooks: [hook("login", ["PostClaim"])] });
    assert.equal(dueWork(pod, claimed, claimOnly, rec(), false, T0), "claim", "no post work: claim at once");
  });

  it("runs a failed phase again after FAILED_HOOK_RETRY_MS, or at once after a policy edit", () => {
    const pod = member(claimed);
    const failed = rec({ post: phase("Failed", { at: T0 }) });
    assert.equal(dueWork(pod, claimed, all, failed, false, T0 + FAILED_HOOK_RETRY_MS - 1), undefined);
    assert.equal(dueWork(pod, claimed, all, failed, false, T0 + FAILED_HOOK_RETRY_MS), "post");
    const edited = policy(all.spec, 2);
    assert.equal(dueWork(pod, claimed, edited, failed, false, T0 + 1), "post");

    const posted = { post: phase("Succeeded") };
    const claimFailed = rec({ ...posted, claim: { name: "c1", ...phase("Failed") } });
    assert.equal(dueWork(pod, claimed, all, claimFailed, false, T0 + 1), undefined);
    assert.equal(dueWork(pod, claimed, all, claimFailed, false, T0 + FAILED_HOOK_RETRY_MS), "claim");

    const preFailed = rec({
      ...posted,
      claim: { name: "c1", ...phase("Succeeded") },
      preHibernate: phase("Failed"),
    });
    assert.equal(dueWork(pod, claimed, all, preFailed, true, T0 + 1), undefined);
    assert.equal(dueWork(pod, claimed, all, preFailed, true, T0 + FAILED_HOOK_RETRY_MS), "preHibernate");
    assert.equal(dueWork(pod, claimed, policy(all.spec, 2), preFailed, true, T0 + 1), "preHibernate");
  });

  it("owes nothing a policy does not ask for", () => {
    const none = policy({ hooks: [] });
    assert.equal(dueWork(member(claimed), claimed, none, rec(), true, T0), undefined);
  });
});

describe("memberGate", () => {
  const gated = policy({ refresh: { afterClone: true, afterWake: true } });
  const withRecord = (record: GuestHooksRecord, set = cs) => member(set, { record });

  it("holds a Ready member as pending until its record says post succeeded", () => {
    const held = memberGate(member(cs), cs, gated);
    assert.equal(held?.reason, REASON_HOOKS_PENDING);
    assert.match(held?.message ?? "", /demo-0/);
    assert.equal(
      memberGate(withRecord({ vmID: VM, origin: "clone", post: phase("Succeeded") }), cs, gated),
      undefined,
    );
  });

  it("holds on a record of an earlier VM", () => {
    const earlier = withRecord({ vmID: "vm-earlier", origin: "clone", post: phase("Succeeded") });
    assert.equal(memberGate(earlier, cs, gated)?.reason, REASON_HOOKS_PENDING);
  });

  it("holds a failed member with the hook's name in the message", () => {
    const failed = withRecord({
      vmID: VM,
      origin: "clone",
      post: phase("Failed", { hook: "refresh", message: "exited with status 1" }),
    });
    const held = memberGate(failed, cs, gated);
    assert.equal(held?.reason, REASON_HOOK_FAILED);
    assert.match(held?.message ?? "", /PostClone hook refresh failed on pod demo-0: exited with status 1/);
  });

  it("never holds a member whose hooks are all Ignore", () => {
    const lenient = policy({
      hooks: [hook("note", ["PostClone", "PostWake", "PostClaim"], { failurePolicy: "Ignore" })],
    });
    assert.equal(memberGate(member(cs), cs, lenient), undefined);
    const claimed = guestSet({ claim: "c1" });
    assert.equal(memberGate(member(claimed), claimed, lenient), undefined);
  });

  it("holds only by the origin's own hooks once the origin is known", () => {
    const wakeOnlyGate = policy({
      hooks: [hook("w", ["PostWake"]), hook("c", ["PostClone"], { failurePolicy: "Ignore" })],
    });
    assert.equal(memberGate(withRecord({ vmID: VM, origin: "clone" }), cs, wakeOnlyGate), undefined);
    assert.equal(
      memberGate(withRecord({ vmID: VM, origin: "wake" }), cs, wakeOnlyGate)?.reason,
      REASON_HOOKS_PENDING,
    );
    assert.equal(
      memberGate(withRecord({ vmID: VM }), cs, wakeOnlyGate)?.reason,
      REASON_HOOKS_PENDING,
      "unknown origin: either",
    );
  });

  it("holds every hookable Ready member when the named policy is missing", () => {
    const held = memberGate(member(cs), cs, null);
    assert.equal(held?.reason, REASON_POLICY_NOT_FOUND);
    assert.match(held?.message ?? "", /CocoonGuestPolicy fresh not found in namespace ns/);
    assert.equal(
      memberGate(member(cs, { ready: false }), cs, null),
      undefined,
      "not Ready: not held, not counted",
    );
    assert.equal(memberGate(withOS(member(cs), "windows"), cs, null), undefined);
  });

  it("gates a claim per claim name, once post succeeded", () => {
    const claimGate = policy({ hooks: [hook("login", ["PostClaim"])] });
    const claimed = guestSet({ claim: "c1" });
    const pending = memberGate(withRecord({ vmID: VM }, claimed), claimed, claimGate);
    assert.equal(pending?.reason, REASON_HOOKS_PENDING);
    assert.match(pending?.message ?? "", /PostClaim hooks for claim c1/);
    const otherClaim = withRecord({ vmID: VM, claim: { name: "c0", ...phase("Succeeded") } }, claimed);
    assert.equal(memberGate(otherClaim, claimed, claimGate)?.reason, REASON_HOOKS_PENDING);
    const done = withRecord({ vmID: VM, claim: { name: "c1", ...phase("Succeeded") } }, claimed);
    assert.equal(memberGate(done, claimed, claimGate), undefined);
    const failed = withRecord(
      { vmID: VM, claim: { name: "c1", ...phase("Failed", { hook: "login", message: "no" }) } },
      claimed,
    );
    const held = memberGate(failed, claimed, claimGate);
    assert.equal(held?.reason, REASON_HOOK_FAILED);
    assert.match(held?.message ?? "", /PostClaim hook login failed/);
    assert.equal(memberGate(member(cs), cs, claimGate), undefined, "an unclaimed set owes no claim hooks");
  });

  it("does not hold a member that is not Ready (it is not counted anyway)", () => {
    assert.equal(memberGate(member(cs, { ready: false }), cs, gated), undefined);
  });
});

describe("preHibernateVerdict", () => {
  const flush = policy({ hooks: [hook("flush", ["PreHibernate"])] });
  const withPre = (pre: GuestHooksRecord["preHibernate"]) =>
    member(cs, { record: { vmID: VM, ...(pre ? { preHibernate: pre } : {}) } });

  it("proceeds without a policy, a VM, a hookable guest or pre-hibernate hooks", () => {
    assert.deepEqual(preHibernateVerdict(member(cs), null, T0), { action: "proceed" });
    assert.deepEqual(preHibernateVerdict(member(cs, { annotations: { [ANN_VM_ID]: "" } }), flush, T0), {
      action: "proceed",
    });
    assert.deepEqual(preHibernateVerdict(withOS(member(cs), "windows"), flush, T0), { action: "proceed" });
    assert.deepEqual(preHibernateVerdict(member(cs), policy({ refresh: { afterWake: true } }), T0), {
      action: "proceed",
    });
  });

  it("runs the hook when owed, and proceeds once it succeeded for this VM", () => {
    assert.deepEqual(preHibernateVerdict(member(cs), flush, T0), { action: "run" });
    assert.deepEqual(preHibernateVerdict(withPre(phase("Succeeded")), flush, T0), { action: "proceed" });
    const earlierVM = member(cs, { record: { vmID: "vm-earlier", preHibernate: phase("Succeeded") } });
    assert.deepEqual(preHibernateVerdict(earlierVM, flush, T0), { action: "run" });
  });

  it("refuses a failed one until it is due, with the time left", () => {
    const failed = withPre(phase("Failed", { hook: "flush", message: "exited with status 2" }));
    const verdict = preHibernateVerdict(failed, flush, T0 + 60_000);
    assert.equal(verdict.action, "refused");
    assert.equal(verdict.action === "refused" ? verdict.retryAfterMs : 0, FAILED_HOOK_RETRY_MS - 60_000);
    assert.match(
      verdict.action === "refused" ? verdict.message : "",
      /PreHibernate hook flush failed on pod demo-0/,
    );
    assert.deepEqual(preHibernateVerdict(failed, flush, T0 + FAILED_HOOK_RETRY_MS), { action: "run" });
    assert.deepEqual(preHibernateVerdict(failed, policy(flush.spec, 2), T0 + 1), { action: "run" });
  });
});
