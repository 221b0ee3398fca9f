// A CocoonHibernation behind the guest gate: the pod's pre-hibernate hooks run before it is annotated
// to hibernate. While they run the CR is Pending saying so and polls; a failed Fail hook keeps it
// Pending with the hook's failure until its retry is due; once they passed the hibernate goes on as it
// always did, and a hibernate already in flight is never held back by them.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import { ANN_HIBERNATE } from "../../../src/contract/keys.ts";
import { GuestHooksGate } from "../../../src/guest/gate.ts";
import { ANN_GUEST_HOOKS, FAILED_HOOK_RETRY_MS } from "../../../src/guest/keys.ts";
import { encodeGuestHooksRecord, type PhaseRecord } from "../../../src/guest/record.ts";
import { PreHibernateRequests } from "../../../src/guest/requests.ts";
import { HibernationReconciler } from "../../../src/hibernation/reconciler.ts";
import { REQUEUE_INTERVAL_MS } from "../../../src/hibernation/status.ts";
import { Harness, NS, POD } from "../hibernation/support.ts";
import { guestSet, hook, phase, policy } from "./fixture.ts";

const flush = policy({ hooks: [hook("flush", ["PreHibernate"])] });
const VM_ID = "vm-1";
const POLL = { requeueAfterMs: REQUEUE_INTERVAL_MS };

/**
 * The hibernation harness with the pod running VM_ID (its pre-hibernate phase recorded when given),
 * a CR to hibernate it, and a reconciler asking the real gate, as the operator wires it, with the
 * pod's set naming the policy.
 */
function withGate(opts: { pre?: PhaseRecord; hibernate?: boolean } = {}) {
  const h = new Harness();
  h.seedHibernation();
  h.seedPod({ vmID: VM_ID, running: true, hibernate: opts.hibernate });
  if (opts.pre) recordPreHibernate(h, opts.pre);
  const gate = new GuestHooksGate({
    policy: () => flush,
    requests: new PreHibernateRequests(),
    clock: h.clock,
  });
  const queued: string[] = [];
  gate.enqueue = (namespace, name) => queued.push(`${namespace}/${name}`);
  const asked: string[] = [];
  const reconciler = new HibernationReconciler({
    client: h.client,
    view: h.view,
    registry: h.registry,
    events: h.events,
    clock: h.clock,
    beforeHibernate: (pod: Pod) => {
      asked.push(pod.metadata.name ?? "");
      return gate.beforeHibernate(guestSet(), pod);
    },
  });
  const reconcile = () => reconciler.reconcile({ namespace: NS, name: "hib" }, new AbortController().signal);
  return { h, queued, asked, reconcile };
}

function recordPreHibernate(h: Harness, pre: PhaseRecord): void {
  h.annotatePod({ [ANN_GUEST_HOOKS]: encodeGuestHooksRecord({ vmID: VM_ID, preHibernate: pre }) });
}

const ready = (h: Harness) => h.hibernation()?.status?.conditions?.find((c) => c.type === "Ready");
const annotated = (h: Harness) => h.pod()?.metadata.annotations?.[ANN_HIBERNATE];

describe("CocoonHibernation behind pre-hibernate hooks", () => {
  test("while the hooks are owed: Pending with the gate's message, the pod queued once, not annotated", async () => {
    const { h, queued, reconcile } = withGate();

    assert.deepEqual(await reconcile(), POLL);
    assert.equal(h.hibernation()?.status?.phase, "Pending");
    assert.equal(ready(h)?.message, `pre-hibernate hooks are running on pod ${POD}`);
    assert.deepEqual(h.podPatches(), []);
    assert.equal(annotated(h), undefined);
    assert.deepEqual(queued, [`${NS}/${POD}`]);

    assert.deepEqual(await reconcile(), POLL);
    assert.deepEqual(queued, [`${NS}/${POD}`], "asked again: not queued again");
    assert.equal(h.statusPatches(), 1, "an unchanged Pending is not written again");
    assert.deepEqual(h.podPatches(), []);
  });

  test("once the hook is recorded for the VM, the next pass annotates the pod and goes Hibernating", async () => {
    const { h, reconcile } = withGate();
    await reconcile();
    recordPreHibernate(h, phase("Succeeded"));

    assert.deepEqual(await reconcile(), POLL);
    assert.deepEqual(h.podPatches(), [{ metadata: { annotations: { [ANN_HIBERNATE]: "true" } } }]);
    assert.equal(h.hibernation()?.status?.phase, "Hibernating");
  });

  test("a failed hook: Pending with its failure, not annotated nor queued, requeued when the retry is due", async () => {
    const { h, queued, reconcile } = withGate({
      pre: phase("Failed", { hook: "flush", message: "exited with status 5" }),
    });
    h.clock.advance(60_000);

    assert.deepEqual(await reconcile(), { requeueAfterMs: FAILED_HOOK_RETRY_MS - 60_000 });
    assert.equal(h.hibernation()?.status?.phase, "Pending");
    assert.match(
      ready(h)?.message ?? "",
      /PreHibernate hook flush failed on pod demo-0: exited with status 5/,
    );
    assert.deepEqual(h.podPatches(), []);
    assert.deepEqual(queued, []);

    // The retry is due: the hook is asked for again, and still nothing is annotated.
    h.clock.advance(FAILED_HOOK_RETRY_MS);
    assert.deepEqual(await reconcile(), POLL);
    assert.equal(ready(h)?.message, `pre-hibernate hooks are running on pod ${POD}`);
    assert.deepEqual(h.podPatches(), []);
    assert.deepEqual(queued, [`${NS}/${POD}`]);
  });

  test("hooks passed for the VM running now: annotated at once and Hibernating, as without hooks", async () => {
    const { h, queued, reconcile } = withGate({ pre: phase("Succeeded") });

    assert.deepEqual(await reconcile(), POLL);
    assert.deepEqual(h.podPatches(), [{ metadata: { annotations: { [ANN_HIBERNATE]: "true" } } }]);
    assert.equal(annotated(h), "true");
    assert.equal(h.hibernation()?.status?.phase, "Hibernating");
    assert.deepEqual(queued, []);
  });

  test("a hibernate already in flight is not asked about again, though the hooks are owed", async () => {
    const { h, queued, asked, reconcile } = withGate({ hibernate: true });

    assert.deepEqual(await reconcile(), POLL);
    assert.deepEqual(asked, []);
    assert.deepEqual(queued, []);
    assert.deepEqual(h.podPatches(), []);
    assert.equal(h.hibernation()?.status?.phase, "Hibernating");
  });
});
