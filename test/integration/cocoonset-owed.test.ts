// Owed restores end to end (steps 6, 10, 12 and 13 of docs/cocoonset.md) on the real API
// server, scheduler and registry with the vk-cocoon simulator. A sub-agent and a toolbox deleted while
// a retained set is suspended come back on unsuspend restored from their snapshots — neither booted
// fresh nor refused as fork-from pods over their tags — and the slots that leave the spec and return
// keep or leave the reclaim record: an owed slot stays recorded and is restored when it returns; a
// returning sub-agent slot that is not owed has its tag dropped before its pod is created. The
// simulator's VM journal is the witness of how each VM came up.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import { ANN_FORK_FROM, ANN_RESTORE_FROM_HIBERNATE, TRUE } from "../../src/contract/keys.ts";
import { OciClient, type Simulator, type VmEvent } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { getSet, patchSetSpec } from "../support/setapi.ts";
import {
  createSet,
  deletePodAndWait,
  E2E_IMAGE,
  hasHibernateTag,
  livePod,
  reclaimOf,
  type SetEnv,
  startSetEnv,
  waitPhase,
  waitRunning,
} from "../support/setwait.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
let ns: string;
let pool: string;
let sim: Simulator;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "csowed");
  ({ ns, pool, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
});

const vmName = (set: string, slot: number | string) => `vk-${ns}-${set}-${slot}`;
const TOOLBOX = { name: "tb", image: E2E_IMAGE, mode: "run" as const };

/** The journal of one VM name from `since` (an index into the whole journal) on. */
function journalOf(vm: string, since: number): VmEvent[] {
  return sim.record
    .events()
    .slice(since)
    .filter((e) => e.vmName === vm);
}

/** Suspends the set and waits until every listed VM's snapshot is in the registry. */
async function suspendAndSettle(set: string, vms: string[]): Promise<void> {
  await patchSetSpec(env, ns, set, { suspend: true });
  await waitPhase(env, ns, set, "Suspended");
  for (const vm of vms) assert.ok(await hasHibernateTag(oci, vm), `${vm}:hibernate pushed`);
}

/** The VM came back through a restore of its snapshot by a new pod: no boot, no fork, no refusal. */
function assertRestored(vm: string, since: number, pod: Pod): void {
  const journal = journalOf(vm, since);
  const starts = journal.filter((e) => ["boot", "fork", "restore", "wake"].includes(e.kind));
  assert.deepEqual(
    starts.map((e) => `${e.kind}/${e.source}/${e.podUID}`),
    [`restore/restore/${pod.metadata.uid}`],
    `${vm} came back restored from its snapshot: ${JSON.stringify(journal)}`,
  );
  assert.deepEqual(
    journal.filter((e) => e.kind === "refuse"),
    [],
    `vk-cocoon refused no pod of ${vm}`,
  );
}

/** Waits until the set has no reclaim record and none of the VMs has a tag left. */
async function reclaimed(set: string, vms: string[]): Promise<void> {
  await waitFor(
    `${set}: every tag dropped and the record gone`,
    async () => {
      const cs = await getSet(env, ns, set);
      if (reclaimOf(cs).vms.length > 0) return undefined;
      for (const vm of vms) if (await hasHibernateTag(oci, vm)) return undefined;
      return true;
    },
    60_000,
  );
}

describe("owed restores on unsuspend", () => {
  it("restores a sub-agent and a toolbox deleted while suspended from their snapshots", {
    timeout: 180_000,
  }, async () => {
    await createSet(env, ns, "owed", {
      nodePool: pool,
      agent: { image: E2E_IMAGE, replicas: 1, mode: "clone" },
      toolboxes: [TOOLBOX],
    });
    await waitRunning(env, ns, "owed", 2, 1);
    const sub = vmName("owed", 1);
    const tb = vmName("owed", "tb");
    await suspendAndSettle("owed", [vmName("owed", 0), sub, tb]);

    const since = sim.record.events().length;
    await deletePodAndWait(env, ns, "owed-1");
    await deletePodAndWait(env, ns, "owed-tb");

    await patchSetSpec(env, ns, "owed", { suspend: false });
    await waitRunning(env, ns, "owed", 2, 1);
    const newSub = await livePod(env, ns, "owed", "owed-1");
    const newTb = await livePod(env, ns, "owed", "owed-tb");
    assert.ok(newSub && newTb, "both pods are back");
    assert.equal(
      newSub.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE],
      TRUE,
      "the sub is restore-flagged",
    );
    assert.equal(
      newTb.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE],
      TRUE,
      "the toolbox is restore-flagged",
    );
    assertRestored(sub, since, newSub);
    assertRestored(tb, since, newTb);
    await reclaimed("owed", [vmName("owed", 0), sub, tb]);
  });
});

describe("departed and returning slots", () => {
  it("keeps an owed slot that left the spec recorded, and restores it when it returns", {
    timeout: 240_000,
  }, async () => {
    await createSet(env, ns, "dep", {
      nodePool: pool,
      agent: { image: E2E_IMAGE, replicas: 2, mode: "clone" },
      toolboxes: [TOOLBOX],
    });
    await waitRunning(env, ns, "dep", 3, 1);
    const departed = [vmName("dep", 2), vmName("dep", "tb")];
    await suspendAndSettle("dep", [vmName("dep", 0), vmName("dep", 1), ...departed]);

    // While suspended: the pods of slot 2 and the toolbox go, and so do their slots.
    await deletePodAndWait(env, ns, "dep-2");
    await deletePodAndWait(env, ns, "dep-tb");
    await patchSetSpec(env, ns, "dep", {
      agent: { image: E2E_IMAGE, replicas: 1, mode: "clone" },
      toolboxes: [],
    });
    await waitFor(
      "the edited spec suspended",
      async () => {
        const cs = await getSet(env, ns, "dep");
        return cs.status?.phase === "Suspended" && cs.status.observedGeneration === cs.metadata.generation
          ? true
          : undefined;
      },
      90_000,
    );

    await patchSetSpec(env, ns, "dep", { suspend: false });
    await waitRunning(env, ns, "dep", 2, 0);
    const record = await waitFor(
      "only the departed VMs stay recorded",
      async () => {
        const r = reclaimOf(await getSet(env, ns, "dep"));
        return r.vms.length === 2 ? r : undefined;
      },
      60_000,
    );
    assert.deepEqual([...record.vms].sort(), [...departed].sort());
    assert.deepEqual([...record.restore].sort(), [...departed].sort(), "both are still owed a restore");
    for (const vm of departed) assert.ok(await hasHibernateTag(oci, vm), `${vm}:hibernate kept`);
    assert.ok(!(await hasHibernateTag(oci, vmName("dep", 1))), "the woken sub-agent's tag is dropped");

    const since = sim.record.events().length;
    await patchSetSpec(env, ns, "dep", {
      agent: { image: E2E_IMAGE, replicas: 2, mode: "clone" },
      toolboxes: [TOOLBOX],
    });
    await waitRunning(env, ns, "dep", 3, 1);
    const back = await livePod(env, ns, "dep", "dep-2");
    const backTb = await livePod(env, ns, "dep", "dep-tb");
    assert.ok(back && backTb);
    assertRestored(vmName("dep", 2), since, back);
    assertRestored(vmName("dep", "tb"), since, backTb);
    await reclaimed("dep", departed);
  });

  it("drops the tag of a returning sub slot that is not owed before its pod is created; a returning toolbox is restored", {
    timeout: 240_000,
  }, async () => {
    await createSet(env, ns, "ret", {
      nodePool: pool,
      agent: { image: E2E_IMAGE, replicas: 2, mode: "clone" },
      toolboxes: [TOOLBOX],
    });
    await waitRunning(env, ns, "ret", 3, 1);
    const sub = vmName("ret", 2);
    const tb = vmName("ret", "tb");
    await suspendAndSettle("ret", [vmName("ret", 0), vmName("ret", 1), sub, tb]);

    // Slot 2 and the toolbox leave the spec while their pods still exist (so they are not owed a
    // restore); their wakes are refused, so they leave the spec without waking and their tags stay.
    sim.faults.refuseWake(sub, true);
    sim.faults.refuseWake(tb, true);
    await patchSetSpec(env, ns, "ret", {
      agent: { image: E2E_IMAGE, replicas: 1, mode: "clone" },
      toolboxes: [],
    });
    await patchSetSpec(env, ns, "ret", { suspend: false });
    await waitRunning(env, ns, "ret", 2, 0);
    const record = await waitFor(
      "the departed VMs stay recorded",
      async () => {
        const cs = await getSet(env, ns, "ret");
        // Gone from the API server, not only terminating: vk would retry a terminating pod's wake
        // once the refusal lifts, and that old VM is not what the journal below is about.
        const statuses = await Promise.all(
          ["ret-2", "ret-tb"].map(
            async (pod) => (await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/pods/${pod}`)).status,
          ),
        );
        const r = reclaimOf(cs);
        return r.vms.length === 2 && statuses.every((status) => status === 404) ? r : undefined;
      },
      60_000,
    );
    assert.deepEqual([...record.vms].sort(), [sub, tb].sort());
    assert.deepEqual(record.restore, [], "a slot whose pod existed at unsuspend is owed nothing");
    assert.ok(await hasHibernateTag(oci, sub));
    assert.ok(await hasHibernateTag(oci, tb));
    sim.faults.refuseWake(sub, false);
    sim.faults.refuseWake(tb, false);

    const since = sim.record.events().length;
    await patchSetSpec(env, ns, "ret", {
      agent: { image: E2E_IMAGE, replicas: 2, mode: "clone" },
      toolboxes: [TOOLBOX],
    });
    await waitRunning(env, ns, "ret", 3, 1);
    const back = await livePod(env, ns, "ret", "ret-2");
    const backTb = await livePod(env, ns, "ret", "ret-tb");
    assert.ok(back && backTb);
    // The sub slot left the record before its pod was created: the fork-from pod met no tag.
    assert.equal(back.metadata.annotations?.[ANN_FORK_FROM], vmName("ret", 0));
    assert.equal(back.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], undefined);
    const subJournal = journalOf(sub, since);
    assert.deepEqual(
      subJournal.map((e) => `${e.kind}/${e.podUID}`),
      [`fork/${back.metadata.uid}`],
      `the returning sub slot forked fresh, unrefused: ${JSON.stringify(subJournal)}`,
    );
    // vk-cocoon restores a toolbox from its compatible tag itself; the VM leaves once woken.
    assertRestored(tb, since, backTb);
    await reclaimed("ret", [sub, tb]);
  });
});
