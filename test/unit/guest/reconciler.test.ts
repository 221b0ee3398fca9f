// The guest hooks reconciler over the fake API client and a scripted guest: what a cloned, a woken,
// a claimed and a hibernating VM run, in which order and with which stdin; one record patch per
// phase; failures under Fail and Ignore; and the passes that must cost no exec and no write.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonGuestPolicy } from "../../../src/apis/v1alpha1/types.ts";
import type { ExecRequest } from "../../../src/controller/exec.ts";
import { COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import { READ_OWNER_COMMAND, WRITE_OWNER_COMMAND } from "../../../src/guest/decide.ts";
import {
  ANN_GUEST_HOOKS,
  FAILED_HOOK_RETRY_MS,
  REASON_EVENT_HOOK_FAILED,
  REASON_EVENT_HOOK_IGNORED,
  REASON_EVENT_HOOK_SUCCEEDED,
} from "../../../src/guest/keys.ts";
import { GuestReconciler } from "../../../src/guest/reconciler.ts";
import { type GuestHooksRecord, readGuestHooksRecord } from "../../../src/guest/record.ts";
import { PreHibernateRequests } from "../../../src/guest/requests.ts";
import { createLogger } from "../../../src/log.ts";
import { RecordingEvents } from "../../support/events.ts";
import { FakeClient, type FakeExecAnswer } from "../../support/fakeclient.ts";
import { AT0, guestSet, hook, member, NS, phase, policy, SET_UID, SteppingClock } from "./fixture.ts";

const ENTROPY = Uint8Array.from({ length: 64 }, (_, i) => (i * 7 + 1) % 256);
const SUB = "demo-1";
const SUB_VM = "vk-ns-demo-1";
const MAIN_MARK = `vk-ns-demo-0@${SET_UID}`;
const OWN_MARK = `${SUB_VM}@${SET_UID}`;

interface Setup {
  cs?: CocoonSet;
  policy?: CocoonGuestPolicy;
  pod?: (cs: CocoonSet) => Pod;
  /** The guest's owner mark: what `cat owner` prints. */
  mark?: string;
  /** Answers by the command's text (its last word); others succeed. */
  answers?: Record<string, FakeExecAnswer>;
  claimParameters?: Record<string, string>;
}

function fixture(setup: Setup = {}) {
  const client = new FakeClient();
  const clock = new SteppingClock();
  client.execClock = clock;
  const cs = client.seed(COCOONSETS, setup.cs ?? guestSet());
  const pod = client.seed(PODS, setup.pod ? setup.pod(cs) : member(cs, { slot: 1 }));
  const policies = new Map<string, CocoonGuestPolicy>();
  if (setup.policy) policies.set(`${NS}/${setup.policy.metadata.name}`, setup.policy);
  const execs: ExecRequest[] = [];
  client.onExec((request) => {
    execs.push(request);
    const text = request.command.join(" ");
    if (text === READ_OWNER_COMMAND.join(" "))
      return { stdout: setup.mark === undefined ? "" : `${setup.mark}\n` };
    for (const [word, answer] of Object.entries(setup.answers ?? {})) if (text.endsWith(word)) return answer;
    return {};
  });
  const events = new RecordingEvents();
  const lines: string[] = [];
  const requests = new PreHibernateRequests();
  /** What the reconciler's cache shows: the stored pod, unless a test holds an older one. */
  let cachedPod: Pod | undefined;
  const reconciler = new GuestReconciler({
    client,
    view: {
      getPod: (namespace, name) => cachedPod ?? client.peek<Pod>(PODS, namespace, name),
      getCocoonSet: (namespace, name) => client.peek<CocoonSet>(COCOONSETS, namespace, name),
    },
    policy: (namespace, name) => policies.get(`${namespace}/${name}`),
    executor: client,
    requests,
    events,
    clock,
    log: createLogger({ write: (line) => lines.push(line) }),
    random: (bytes) => ENTROPY.slice(0, bytes),
    ...(setup.claimParameters ? { claimParameters: () => setup.claimParameters } : {}),
  });
  const name = pod.metadata.name ?? "";
  return {
    client,
    clock,
    events,
    lines,
    requests,
    execs,
    pod,
    reconcile: () => reconciler.reconcile({ namespace: NS, name }, new AbortController().signal),
    holdCache: (held: Pod | undefined) => {
      cachedPod = held;
    },
    stored: () => client.peek<Pod>(PODS, NS, name),
    record: (): GuestHooksRecord => {
      const stored = client.peek<Pod>(PODS, NS, name);
      return stored ? readGuestHooksRecord(stored) : { vmID: "" };
    },
    /** Each exec by what it ran: read-owner, write-owner, refresh, or the hook's command. */
    ran: () =>
      execs.map((r) => {
        const text = r.command.join(" ");
        if (text === READ_OWNER_COMMAND.join(" ")) return "read-owner";
        if (text === WRITE_OWNER_COMMAND.join(" ")) return "write-owner";
        if (text.includes("cat > /dev/urandom")) return "refresh";
        return r.command[2] ?? text;
      }),
    podPatches: () => client.writes().filter((c) => c.resource === "pods" && c.verb === "patch"),
  };
}

const cloneWake = policy({
  refresh: { afterClone: true, afterWake: true },
  hooks: [
    hook("rekey", ["PostClone"]),
    hook("resync", ["PostClone", "PostWake"]),
    hook("flush", ["PreHibernate"]),
  ],
});

describe("GuestReconciler: post hooks", () => {
  it("a clone runs the refresh, then PostClone hooks, then writes the owner mark, and records once", async () => {
    const f = fixture({ policy: cloneWake, mark: MAIN_MARK });
    assert.deepEqual(await f.reconcile(), {});
    assert.deepEqual(f.ran(), ["read-owner", "refresh", "run-rekey", "run-resync", "write-owner"]);

    const refresh = f.execs[1];
    assert.match(
      refresh?.command[2] ?? "",
      /^date -s @\d+ && cat > \/dev\/urandom && rm -f \/etc\/machine-id && .* set-hostname demo-1 && /,
    );
    assert.deepEqual(Buffer.from(refresh?.stdin ?? []), Buffer.from(ENTROPY), "64 bytes of randomness");
    assert.equal(refresh?.stdin?.length, 64);
    for (const exec of f.execs.slice(2, 4)) {
      assert.deepEqual(JSON.parse(Buffer.from(exec.stdin ?? []).toString("utf8")), {
        point: "PostClone",
        namespace: NS,
        pod: SUB,
        cocoonSet: "demo",
        vmName: SUB_VM,
        origin: "clone",
      });
    }
    assert.equal(Buffer.from(f.execs[4]?.stdin ?? []).toString("utf8"), OWN_MARK);

    const patches = f.podPatches();
    assert.equal(patches.length, 1, "one merge patch of the record");
    const body = patches[0]?.body as { metadata: { uid: string; annotations: Record<string, string> } };
    assert.equal(body.metadata.uid, f.pod.metadata.uid, "guarded by the pod's uid");
    assert.deepEqual(Object.keys(body.metadata.annotations), [ANN_GUEST_HOOKS]);
    assert.deepEqual(f.record(), {
      vmID: "vm-demo-1",
      origin: "clone",
      post: { result: "Succeeded", at: AT0, policyGeneration: 1 },
    });
    assert.deepEqual(f.events.reasons(), [
      REASON_EVENT_HOOK_SUCCEEDED,
      REASON_EVENT_HOOK_SUCCEEDED,
      REASON_EVENT_HOOK_SUCCEEDED,
    ]);
  });

  it("a guest without any mark (a first boot) is a clone", async () => {
    const f = fixture({ policy: cloneWake });
    await f.reconcile();
    assert.equal(f.record().origin, "clone");
  });

  it("a woken VM (its own mark) runs the wake refresh and PostWake hooks only", async () => {
    const f = fixture({ policy: cloneWake, mark: OWN_MARK });
    await f.reconcile();
    assert.deepEqual(f.ran(), ["read-owner", "refresh", "run-resync", "write-owner"]);
    assert.match(f.execs[1]?.command[2] ?? "", /^date -s @\d+ && cat > \/dev\/urandom$/);
    const context = JSON.parse(Buffer.from(f.execs[2]?.stdin ?? []).toString("utf8"));
    assert.equal(context.point, "PostWake");
    assert.equal(context.origin, "wake");
    assert.equal(f.record().origin, "wake");
    assert.equal(f.record().post?.result, "Succeeded");
  });

  it("a Fail hook's failure stops the hooks after it and records Failed with its name", async () => {
    const f = fixture({ policy: cloneWake, mark: MAIN_MARK, answers: { "run-rekey": { exitCode: 3 } } });
    const result = await f.reconcile();
    assert.deepEqual(f.ran(), ["read-owner", "refresh", "run-rekey"], "no later hook, no owner mark");
    assert.deepEqual(f.record().post, {
      result: "Failed",
      at: AT0,
      policyGeneration: 1,
      hook: "rekey",
      message: "exited with status 3",
    });
    const failed = f.events.events.filter((e) => e.reason === REASON_EVENT_HOOK_FAILED);
    assert.equal(failed.length, 1);
    assert.equal(failed[0]?.type, "Warning");
    assert.equal(failed[0]?.object, "demo", "on the set");
    assert.match(
      failed[0]?.message ?? "",
      /hook rekey \(PostClone\) on pod demo-1 failed after 1 attempt: exited with status 3/,
    );
    assert.ok(!(failed[0]?.message ?? "").includes("run-rekey"), "never the command");
    assert.deepEqual(result, { requeueAfterMs: FAILED_HOOK_RETRY_MS }, "looked at again when due");
  });

  it("an Ignore hook's failure is a Warning and the phase still succeeds", async () => {
    const lenient = policy({
      hooks: [hook("note", ["PostClone"], { failurePolicy: "Ignore" }), hook("after", ["PostClone"])],
    });
    const f = fixture({ policy: lenient, answers: { "run-note": { exitCode: 1 } } });
    await f.reconcile();
    assert.deepEqual(f.ran(), ["read-owner", "run-note", "run-after", "write-owner"]);
    assert.equal(f.record().post?.result, "Succeeded");
    const ignored = f.events.events.find((e) => e.reason === REASON_EVENT_HOOK_IGNORED);
    assert.equal(ignored?.type, "Warning");
    assert.match(ignored?.message ?? "", /hook note \(PostClone\).*ignored: exited with status 1/);
  });

  it("an unreadable owner mark fails the post phase as read-owner, after its retries", async () => {
    const f = fixture({ policy: cloneWake });
    f.client.onExec(() => ({ providerError: "pod ns/demo-1 has no live VM" }));
    await f.reconcile();
    assert.equal(f.execs.length, 0, "the script replaced");
    const post = f.record().post;
    assert.equal(post?.result, "Failed");
    assert.equal(post?.hook, "read-owner");
    assert.deepEqual(f.clock.slept, [1000, 2000]);
    // Reported like a hook: a Warning on the set that says what failed, not what ran.
    assert.deepEqual(f.events.reasons(), [REASON_EVENT_HOOK_FAILED]);
    assert.match(
      f.events.events[0]?.message ?? "",
      /^hook read-owner \(PostClone\) on pod demo-1 failed after 3 attempts: /,
    );
  });

  it("a VM whose phases are recorded costs no exec and no write", async () => {
    const f = fixture({
      policy: cloneWake,
      pod: (cs) =>
        member(cs, { slot: 1, record: { vmID: "vm-demo-1", origin: "clone", post: phase("Succeeded") } }),
    });
    f.client.clearCalls();
    assert.deepEqual(await f.reconcile(), {});
    assert.equal(f.execs.length, 0);
    assert.deepEqual(f.client.writes(), []);
  });

  it("a cache that does not show its own record yet does not run the phase again", async () => {
    const f = fixture({ policy: cloneWake, mark: MAIN_MARK });
    const before = f.stored();
    f.holdCache(before);
    await f.reconcile();
    assert.equal(f.execs.length, 5);
    f.client.clearCalls();
    assert.deepEqual(await f.reconcile(), {});
    assert.equal(f.execs.length, 5, "no exec on the stale cache");
    assert.deepEqual(f.client.writes(), [], "no write either");
  });

  it("a pod replaced while its hooks ran gets no record of the old VM, and the pass does not fail", async () => {
    const f = fixture({ policy: cloneWake, mark: MAIN_MARK });
    const old = f.stored();
    assert.ok(old);
    // The cache still shows the old pod; the API server holds a new one of the same name.
    f.holdCache(old);
    f.client.seed(PODS, {
      ...old,
      metadata: { ...old.metadata, uid: "uid-of-the-new-pod", annotations: {} },
    });
    assert.deepEqual(await f.reconcile(), {});
    assert.equal(f.stored()?.metadata.annotations?.[ANN_GUEST_HOOKS], undefined);
  });

  it("a new VM of the same pod owes its hooks again", async () => {
    const f = fixture({ policy: cloneWake, mark: OWN_MARK });
    await f.reconcile();
    const woken = f.stored();
    assert.ok(woken);
    woken.metadata.annotations = { ...woken.metadata.annotations, "vm.cocoonstack.io/id": "vm-demo-1-b" };
    f.client.seed(PODS, woken);
    await f.reconcile();
    assert.equal(f.ran().filter((r) => r === "read-owner").length, 2);
    assert.equal(f.record().vmID, "vm-demo-1-b");
  });
});

describe("GuestReconciler: claim and pre-hibernate", () => {
  const claimPolicy = policy({ hooks: [hook("login", ["PostClaim"])] });

  it("PostClaim stdin carries the claim and its parameters; they never reach events or logs", async () => {
    const f = fixture({
      cs: guestSet({ claim: "c1" }),
      policy: claimPolicy,
      claimParameters: { token: "s3cr3t-t0ken" },
      answers: { "run-login": { exitCode: 4 } },
    });
    await f.reconcile();
    assert.deepEqual(f.ran(), ["run-login"], "no post work: no owner read");
    assert.deepEqual(JSON.parse(Buffer.from(f.execs[0]?.stdin ?? []).toString("utf8")), {
      point: "PostClaim",
      namespace: NS,
      pod: SUB,
      cocoonSet: "demo",
      vmName: SUB_VM,
      claim: { name: "c1", parameters: { token: "s3cr3t-t0ken" } },
    });
    assert.deepEqual(f.record().claim, {
      name: "c1",
      result: "Failed",
      at: AT0,
      policyGeneration: 1,
      hook: "login",
      message: "exited with status 4",
    });
    assert.ok(f.lines.length > 0, "the failure was logged");
    for (const text of [...f.lines, ...f.events.events.map((e) => e.message), JSON.stringify(f.record())])
      assert.ok(!text.includes("s3cr3t"), `no parameter in ${text}`);
  });

  it("runs claim hooks after the post phase in the same pass", async () => {
    const both = policy({ hooks: [hook("fix", ["PostClone"]), hook("login", ["PostClaim"])] });
    const f = fixture({ cs: guestSet({ claim: "c1" }), policy: both });
    await f.reconcile();
    assert.deepEqual(f.ran(), ["read-owner", "run-fix", "write-owner", "run-login"]);
    assert.equal(f.podPatches().length, 2, "one record patch per phase");
    assert.equal(f.record().claim?.result, "Succeeded");
  });

  it("runs pre-hibernate hooks only when asked, then answers from the record", async () => {
    const pre = policy({ hooks: [hook("flush", ["PreHibernate"])] });
    const f = fixture({ policy: pre });
    await f.reconcile();
    assert.equal(f.execs.length, 0, "not asked");
    assert.equal(f.requests.ask(f.pod, "vm-demo-1"), true);
    await f.reconcile();
    assert.deepEqual(f.ran(), ["run-flush"]);
    assert.equal(JSON.parse(Buffer.from(f.execs[0]?.stdin ?? []).toString("utf8")).point, "PreHibernate");
    assert.equal(f.record().preHibernate?.result, "Succeeded");
    assert.equal(f.requests.has(f.pod, "vm-demo-1"), false, "the request is answered");
    await f.reconcile();
    assert.equal(f.execs.length, 1);
  });

  it("a request the record already answers is dropped: a failed hook is not re-run unasked", async () => {
    const pre = policy({ hooks: [hook("flush", ["PreHibernate"])] });
    const f = fixture({ policy: pre, answers: { "run-flush": { exitCode: 2 } } });
    const before = f.stored();
    f.requests.ask(f.pod, "vm-demo-1");
    await f.reconcile();
    assert.equal(f.record().preHibernate?.result, "Failed");
    // The gate, on a cache without that record yet, asks again; the reconciler's own view (the
    // record it wrote) answers it, so nothing runs and the request must not linger.
    f.holdCache(before);
    assert.equal(f.requests.ask(f.pod, "vm-demo-1"), true);
    await f.reconcile();
    assert.equal(f.execs.length, 1);
    assert.equal(f.requests.has(f.pod, "vm-demo-1"), false);
    // The suspend is called off; when the retry comes due nobody has asked for a hibernate.
    f.holdCache(undefined);
    f.clock.current += FAILED_HOOK_RETRY_MS;
    await f.reconcile();
    assert.equal(f.execs.length, 1, "no quiesce hook in a VM that is not going to hibernate");
  });

  it("a set without a policy, or naming a missing one, costs no exec and no write", async () => {
    for (const setup of [
      { cs: guestSet({ policy: "" }), policy: cloneWake },
      { policy: undefined },
    ] as Setup[]) {
      const f = fixture(setup);
      f.client.clearCalls();
      assert.deepEqual(await f.reconcile(), {});
      assert.equal(f.execs.length, 0);
      assert.deepEqual(f.client.calls, []);
    }
  });

  it("a pod gone from the cache drops its pre-hibernate request", async () => {
    const f = fixture({ policy: cloneWake });
    f.requests.ask(f.pod, "vm-demo-1");
    f.client.finishPodDeletion(NS, SUB);
    await f.reconcile();
    assert.equal(f.requests.size, 0);
    assert.equal(f.execs.length, 0);
  });
});
