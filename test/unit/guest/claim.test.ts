// A claim behind guest hooks: it is Ready only once its set's hooks hold no member, this claim's
// PostClaim hooks among them, even while the set cache does not show the bind yet (no claim label on
// the cached set, so nothing in the set says a PostClaim hook is owed).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonClaim } from "../../../src/apis/v1alpha1/types.ts";
import { COCOONCLAIMS, COCOONPOOLS, COCOONSETS } from "../../../src/controller/resources.ts";
import { GuestHooksGate } from "../../../src/guest/gate.ts";
import { ANN_GUEST_POLICY } from "../../../src/guest/keys.ts";
import type { GuestHooksRecord } from "../../../src/guest/record.ts";
import { PreHibernateRequests } from "../../../src/guest/requests.ts";
import { ClaimReconciler } from "../../../src/pool/claimreconciler.ts";
import { FINALIZER_COCOONCLAIM } from "../../../src/pool/keys.ts";
import { cocoonClaim, cocoonPool, NS, poolHarness, member as poolMember } from "../../support/pool.ts";
import { hook, member, phase, policy } from "./fixture.ts";

const welcome = policy({ hooks: [hook("welcome", ["PostClaim"])] });

/** A Running pool member naming the policy, whose pod's record is `record`. */
function setup(record: GuestHooksRecord) {
  const h = poolHarness();
  const pool = h.client.seed(COCOONPOOLS, cocoonPool());
  const cs = poolMember(pool, "m0", "Running");
  cs.metadata.annotations = { ...cs.metadata.annotations, [ANN_GUEST_POLICY]: welcome.metadata.name ?? "" };
  h.client.seed(COCOONSETS, cs);
  h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
  const gate = new GuestHooksGate({
    policy: () => welcome,
    requests: new PreHibernateRequests(),
    clock: h.clock,
  });
  const pod = member({ ...cs, metadata: { ...cs.metadata, namespace: NS } }, { slot: 0, record });
  const reconciler = new ClaimReconciler({
    client: h.client,
    view: h.view,
    events: h.events,
    clock: h.clock,
    log: h.log,
    guestHeld: (set: CocoonSet, claim: string) =>
      gate.heldMembers(set, [pod], claim).held.values().next().value,
  });
  const ready = () =>
    h.client.peek<CocoonClaim>(COCOONCLAIMS, NS, "c1")?.status?.conditions?.find((c) => c.type === "Ready");
  return { h, reconciler, ready };
}

describe("a claim behind its PostClaim hooks", () => {
  it("is not Ready while the set cache lags the bind: the claim names itself to the gate", async () => {
    const { h, reconciler, ready } = setup({ vmID: "vm-demo-0", origin: "clone", post: phase("Succeeded") });
    const before = h.client.storeChanges.length;
    assert.deepEqual(await reconciler.reconcile({ namespace: NS, name: "c1" }), { requeueAfterMs: 5_000 });
    assert.equal(ready()?.status, "False");
    assert.equal(ready()?.reason, "HooksPending");
    // The set's watch dropped: its cache is from before the bind (no claim label); the claims' is current.
    h.view.lag = h.client.storeChanges.length - before;
    h.view.claim = (namespace, name) => h.client.peek<CocoonClaim>(COCOONCLAIMS, namespace, name);
    assert.equal(h.view.set(NS, "m0")?.metadata.labels?.["cocoonset.cocoonstack.io/claim"], undefined);
    await reconciler.reconcile({ namespace: NS, name: "c1" });
    assert.equal(ready()?.status, "False");
    assert.match(ready()?.message ?? "", /PostClaim hooks for claim c1 have not run on pod demo-0/);
  });

  it("is Ready once the record says this claim's hooks succeeded", async () => {
    const { reconciler, ready } = setup({
      vmID: "vm-demo-0",
      origin: "clone",
      post: phase("Succeeded"),
      claim: { name: "c1", ...phase("Succeeded") },
    });
    assert.deepEqual(await reconciler.reconcile({ namespace: NS, name: "c1" }), {});
    assert.equal(ready()?.status, "True");
  });
});
