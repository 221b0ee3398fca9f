// Guest hooks (docs/guest.md) end to end, on the real API server and registry with the vk-cocoon
// simulator, every hook going through the API server's pod exec to the simulated guest: clones come up
// as machines of their own, a woken VM keeps its identity and gets the operator's clock, a failed Fail
// hook holds its member from Ready (and an edit of the policy runs it again), a failed pre-hibernate
// hook keeps a suspend from snapshotting anything, a claim's parameters reach its PostClaim hook and
// no event, and a settled set costs no exec.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import type { CocoonGuestPolicySpec } from "../../src/apis/v1alpha1/types.ts";
import { ANN_HIBERNATE, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import {
  ANN_GUEST_HOOKS,
  ANN_GUEST_POLICY,
  CONDITION_GUEST_HOOKS,
  GUEST_OWNER_FILE,
  REASON_EVENT_HOOK_FAILED,
  REASON_HOOK_FAILED,
  REASON_PRE_HIBERNATE_FAILED,
} from "../../src/guest/keys.ts";
import { readGuestHooksRecord } from "../../src/guest/record.ts";
import { OciClient, type Simulator } from "../env/simulator/index.ts";
import { type ApiConnection, apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { putGuestPolicy } from "../support/guestapi.ts";
import { startTestOperator } from "../support/operator.ts";
import {
  claimReady,
  claimsPath,
  createPool,
  getClaim,
  poolMembers,
  waitPoolReady,
} from "../support/poolapi.ts";
import { createPoolSet, getSet, isRunning, objectEvents, patchSetSpec, setPods } from "../support/setapi.ts";
import { type SetEnv, startSetEnv, waitPhase } from "../support/setwait.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
const suffix = randomBytes(3).toString("hex");
const pool = `guest-${suffix}`;
let ns: string;
let sim: Simulator;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "guest", { nodes: [{ name: `guest-node-${suffix}`, pool }] });
  ({ ns, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
});

const putPolicy = (conn: ApiConnection, name: string, spec: CocoonGuestPolicySpec) =>
  putGuestPolicy(conn, ns, name, spec);

const condition = (cs: CocoonSet, type: string) => cs.status?.conditions?.find((c) => c.type === type);

function guestOf(pod: Pod) {
  const guest = sim.guestOf(ns, pod.metadata.name ?? "");
  assert.ok(guest, `pod ${pod.metadata.name} has a live guest`);
  return guest;
}

/** The guest's identity: machine-id, hostname, host key, and its kernel's random pool. */
function identity(pod: Pod) {
  const guest = guestOf(pod);
  const state = guest.capture(Date.now());
  return {
    machineId: guest.machineId(),
    hostname: guest.hostname,
    hostKey: guest.hostKeyFingerprint(),
    random: state.random,
  };
}

const execs = (podName?: string) =>
  sim.record.events({ kind: "exec", ...(podName ? { podName } : {}) }).map((e) => e.detail ?? "");

function waitRunning(name: string, agents: number): Promise<CocoonSet> {
  return waitFor(
    `${name} Running with ${agents} agents`,
    async () => {
      const cs = await getSet(env, ns, name);
      return isRunning(cs, agents) && condition(cs, CONDITION_GUEST_HOOKS)?.status === "True"
        ? cs
        : undefined;
    },
    90_000,
  );
}

describe("guest hooks", () => {
  it("a main and its forked sub-agents come up as machines of their own, refreshed after the clone", async () => {
    await putPolicy(env, "fresh", { refresh: { afterClone: true, afterWake: true } });
    await createPoolSet(
      env,
      ns,
      pool,
      "forks",
      { agent: { image: "ubuntu-dev-base", replicas: 2, mode: "clone" } },
      {
        [ANN_GUEST_POLICY]: "fresh",
      },
    );
    await waitRunning("forks", 3);
    const pods = await setPods(env, ns, "forks");
    assert.equal(pods.length, 3);
    const ids = pods.map(identity);
    for (const field of ["machineId", "hostKey", "random"] as const) {
      assert.equal(
        new Set(ids.map((id) => id[field])).size,
        3,
        `three distinct ${field}s: ${JSON.stringify(ids)}`,
      );
    }
    for (const pod of pods) {
      assert.equal(guestOf(pod).hostname, pod.metadata.name, "hostname = the pod's name");
      const record = readGuestHooksRecord(pod);
      assert.equal(record.vmID, pod.metadata.annotations?.["vm.cocoonstack.io/id"]);
      assert.equal(record.origin, "clone");
      assert.equal(record.post?.result, "Succeeded");
      const owner = guestOf(pod).capture(Date.now()).files[GUEST_OWNER_FILE];
      assert.ok(owner, "the guest carries its owner mark");
      assert.match(Buffer.from(owner, "base64").toString("utf8"), new RegExp(`^vk-${ns}-forks-\\d@`));
    }
  });

  it("a woken VM keeps its identity, runs PostWake after PreHibernate ran before its hibernate, and gets the operator's clock", async () => {
    await putPolicy(env, "wake", {
      refresh: { afterClone: true, afterWake: true },
      hooks: [
        {
          name: "flush",
          on: ["PreHibernate"],
          exec: { command: ["sh", "-c", "echo flushed > /var/flushed"] },
        },
        { name: "woke", on: ["PostWake"], exec: { command: ["sh", "-c", "echo woke >> /var/woke"] } },
      ],
    });
    await createPoolSet(env, ns, pool, "sleeper", {}, { [ANN_GUEST_POLICY]: "wake" });
    await waitRunning("sleeper", 1);
    const [before] = await setPods(env, ns, "sleeper");
    assert.ok(before);
    const identityBefore = identity(before);
    await patchSetSpec(env, ns, "sleeper", { suspend: true });
    await waitPhase(env, ns, "sleeper", "Suspended", 90_000, true);
    const vm = `vk-${ns}-sleeper-0`;
    const flush = sim.record
      .events({ vmName: vm })
      .findIndex((e) => e.kind === "exec" && e.detail?.includes("flushed"));
    const hibernate = sim.record.events({ vmName: vm }).findIndex((e) => e.kind === "hibernate");
    assert.ok(flush >= 0 && hibernate > flush, "the pre-hibernate hook ran before the VM hibernated");

    await patchSetSpec(env, ns, "sleeper", { suspend: false });
    await waitRunning("sleeper", 1);
    const [woken] = await setPods(env, ns, "sleeper");
    assert.ok(woken);
    const after = identity(woken);
    assert.equal(after.machineId, identityBefore.machineId, "a wake keeps the machine-id");
    assert.equal(after.hostKey, identityBefore.hostKey, "a wake keeps the host keys");
    assert.notEqual(after.random, identityBefore.random, "a wake gets fresh entropy");
    const record = readGuestHooksRecord(woken);
    assert.equal(record.origin, "wake");
    const files = guestOf(woken).capture(Date.now()).files;
    assert.equal(Buffer.from(files["/var/flushed"] ?? "", "base64").toString(), "flushed\n");
    assert.equal(Buffer.from(files["/var/woke"] ?? "", "base64").toString(), "woke\n");
    const clock = guestOf(woken).capture(Date.now()).clockMs;
    assert.ok(
      Math.abs(clock - Date.now()) < 5_000,
      `the guest clock is the operator's (off by ${clock - Date.now()} ms)`,
    );
  });

  it("a failed Fail hook holds its member from Ready and the set says why; an edit of the policy runs it again", async () => {
    await putPolicy(env, "broken", {
      hooks: [
        { name: "seed", on: ["PostClone"], exec: { command: ["sh", "-c", "echo no-seed >&2; exit 3"] } },
      ],
    });
    await createPoolSet(env, ns, pool, "held", {}, { [ANN_GUEST_POLICY]: "broken" });
    const held = await waitFor(
      "held reports the failed hook",
      async () => {
        const cs = await getSet(env, ns, "held");
        return condition(cs, CONDITION_GUEST_HOOKS)?.reason === REASON_HOOK_FAILED ? cs : undefined;
      },
      90_000,
    );
    assert.notEqual(held.status?.phase, "Running");
    assert.equal(held.status?.readyAgents, 0);
    const ready = condition(held, "Ready");
    assert.equal(ready?.status, "False");
    assert.equal(ready?.reason, REASON_HOOK_FAILED);
    assert.match(ready?.message ?? "", /hook seed failed on pod held-0: exited with status 3/);
    const events = await objectEvents(env, ns, "held");
    const failed = events.find((e) => e.reason === REASON_EVENT_HOOK_FAILED);
    assert.ok(failed, "a GuestHookFailed event");
    assert.doesNotMatch(failed.message, /exit 3|no-seed >&2/, "the event never quotes the command");

    await putPolicy(env, "broken", {
      hooks: [
        { name: "seed", on: ["PostClone"], exec: { command: ["sh", "-c", "echo seeded > /var/seed"] } },
      ],
    });
    await waitRunning("held", 1);
  });

  it("a failed pre-hibernate hook leaves a suspend running with a reason, and nothing is snapshotted", async () => {
    await putPolicy(env, "stubborn", {
      hooks: [
        {
          name: "quiesce",
          on: ["PreHibernate"],
          exec: { command: ["sh", "-c", "exit 1"] },
          retries: 1,
          backoffSeconds: 1,
        },
      ],
    });
    await createPoolSet(env, ns, pool, "stays", {}, { [ANN_GUEST_POLICY]: "stubborn" });
    await waitRunning("stays", 1);
    await patchSetSpec(env, ns, "stays", { suspend: true });
    const cs = await waitFor(
      "stays says why it is not suspended",
      async () => {
        const cs = await getSet(env, ns, "stays");
        return condition(cs, "Suspended")?.reason === REASON_PRE_HIBERNATE_FAILED ? cs : undefined;
      },
      60_000,
    );
    assert.equal(cs.status?.phase, "Running");
    assert.match(
      condition(cs, "Suspended")?.message ?? "",
      /hook quiesce failed on pod stays-0: exited with status 1/,
    );
    assert.equal(cs.metadata.annotations?.["cocoonset.cocoonstack.io/suspending-since"], undefined);
    const [pod] = await setPods(env, ns, "stays");
    assert.equal(pod?.metadata.annotations?.[ANN_HIBERNATE], undefined, "the VM was not asked to hibernate");
    assert.equal(await oci.getManifest(`vk-${ns}-stays-0`, TAG_HIBERNATE), null, "no snapshot was taken");

    // Fixed, the hook runs again at once (the policy's generation changed) and the suspend goes ahead.
    await putPolicy(env, "stubborn", {
      hooks: [{ name: "quiesce", on: ["PreHibernate"], exec: { command: ["sync"] } }],
    });
    await waitPhase(env, ns, "stays", "Suspended", 90_000, true);
  });

  it("a claim's parameters reach its PostClaim hook on stdin, never an event, and the claim is Ready only after it", async () => {
    await putPolicy(env, "claimed", {
      // The hook takes two seconds, so a claim reported Ready before it ended would show.
      hooks: [
        {
          name: "welcome",
          on: ["PostClaim"],
          exec: { command: ["sh", "-c", "sleep 2; cat > /etc/claim.json"] },
        },
      ],
    });
    await createPool(env, ns, "warm", {
      replicas: 1,
      template: {
        metadata: { annotations: { [ANN_GUEST_POLICY]: "claimed" } },
        spec: { nodePool: pool, agent: { image: "ubuntu-dev-base", replicas: 0, mode: "clone" } },
      },
    });
    await waitPoolReady(env, ns, "warm", 1);
    const [member] = await poolMembers(env, ns, "warm");
    assert.ok(member);
    const secret = `token-${randomBytes(4).toString("hex")}`;
    const res = await apiRequest(env, "POST", claimsPath(ns), {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonClaim",
      metadata: { name: "alice", namespace: ns },
      spec: { poolRef: { name: "warm" }, parameters: { user: "alice", token: secret } },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    await waitFor(
      "claim alice Ready",
      async () => (claimReady(await getClaim(env, ns, "alice")) ? true : undefined),
      60_000,
    );
    const bound = (await getClaim(env, ns, "alice"))?.status?.cocoonSetRef?.name;
    assert.ok(bound);
    const [pod] = await setPods(env, ns, bound);
    assert.ok(pod);
    // Ready came only once the hook's outcome was recorded for this claim.
    const record = readGuestHooksRecord(pod).claim;
    assert.equal(record?.name, "alice");
    assert.equal(record?.result, "Succeeded");
    const readySince = (await getClaim(env, ns, "alice"))?.status?.conditions?.find(
      (c) => c.type === "Ready",
    );
    assert.ok(
      Date.parse(readySince?.lastTransitionTime ?? "") >= Date.parse(record?.at ?? ""),
      `claim Ready at ${readySince?.lastTransitionTime}, its hook ended at ${record?.at}`,
    );
    const written = JSON.parse(
      Buffer.from(guestOf(pod).capture(Date.now()).files["/etc/claim.json"] ?? "", "base64").toString(),
    );
    assert.equal(written.point, "PostClaim");
    assert.deepEqual(written.claim, { name: "alice", parameters: { user: "alice", token: secret } });
    const events = [...(await objectEvents(env, ns, bound)), ...(await objectEvents(env, ns, "alice"))];
    assert.ok(
      events.every((e) => !e.message.includes(secret)),
      "no event carries a claim parameter",
    );
    assert.ok(!(pod.metadata.annotations?.[ANN_GUEST_HOOKS] ?? "").includes(secret), "nor the record");
  });

  it("a settled set costs no exec, whatever wakes its pods' reconciles", async () => {
    await waitRunning("forks", 3);
    const before = execs().length;
    // A change of each pod wakes the guest controller for it.
    for (const pod of await setPods(env, ns, "forks")) {
      const res = await apiRequest(
        env,
        "PATCH",
        `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}`,
        { metadata: { labels: { touched: "yes" } } },
        "application/merge-patch+json",
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    assert.deepEqual(execs().slice(before), []);
  });

  it("--guest-hooks=false ignores every policy: no exec, no gate, no condition", async () => {
    await e2e?.operator.stop();
    const off = await startTestOperator({
      kubeconfigPath: env.kubeconfigPath,
      registryBase: env.registry,
      namespace: ns,
      guestHooks: false,
    });
    try {
      await putPolicy(env, "never", {
        hooks: [{ name: "fail", on: ["PostClone", "PostWake"], exec: { command: ["false"] } }],
      });
      await createPoolSet(env, ns, pool, "unhooked", {}, { [ANN_GUEST_POLICY]: "never" });
      const cs = await waitFor(
        "unhooked Running",
        async () => {
          const cs = await getSet(env, ns, "unhooked");
          return isRunning(cs, 1) ? cs : undefined;
        },
        90_000,
      );
      assert.equal(condition(cs, CONDITION_GUEST_HOOKS), undefined);
      assert.deepEqual(execs("unhooked-0"), []);
      const [pod] = await setPods(env, ns, "unhooked");
      assert.equal(pod?.metadata.annotations?.[ANN_GUEST_HOOKS], undefined);
    } finally {
      await off.stop();
      await e2e?.startOperator();
    }
  });
});
