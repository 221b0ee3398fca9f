// A backend edit while a set is suspended, end to end on the real API server, scheduler and registry
// with the vk-cocoon simulator (which refuses a snapshot another hypervisor took) and the operator's
// registry traffic journalled by the registry proxy. The snapshot is kept: the set goes Failed with
// the backend the snapshot was taken on, the one the spec asks for and what to set back, stays so
// when resumed, and once the edit is set back the same pod wakes from the same snapshot. Under
// hibernatePolicy release, where the pod is gone once its seat is freed, the reclaim record says what
// the snapshot was taken under, and the wake pod is held to it the same way.

import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { CONDITION_READY } from "../../src/cocoonset/decide/computestatus.ts";
import { REASON_SNAPSHOT_INCOMPATIBLE } from "../../src/cocoonset/decide/heldsnapshots.ts";
import { ANN_HIBERNATE, TAG_HIBERNATE, TRUE } from "../../src/contract/keys.ts";
import { OciClient, type Simulator } from "../env/simulator/index.ts";
import { testEnv, waitFor } from "../env/testenv.ts";
import { type RegistryProxy, startRegistryProxy } from "../support/faultproxy.ts";
import { getSet, objectEvents, patchSetSpec, setPods } from "../support/setapi.ts";
import {
  createSet,
  E2E_IMAGE,
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
let registry: RegistryProxy;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "susedit", {
    beforeOperator: async () => {
      registry = await startRegistryProxy(env.registry);
      return { registryBase: registry.host };
    },
  });
  ({ ns, pool, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
  await registry?.stop();
});

const AGENT = { image: E2E_IMAGE, replicas: 0, mode: "run" };

it("a backend edit while suspended keeps the snapshot, fails saying what to set back, and setting it back wakes the VM from that snapshot", async () => {
  const vm = `vk-${ns}-be-0`;
  await createSet(env, ns, "be", { nodePool: pool, agent: AGENT });
  await waitRunning(env, ns, "be", 1);
  await patchSetSpec(env, ns, "be", { suspend: true });
  await waitPhase(env, ns, "be", "Suspended");
  const pushed = await oci.getManifest(oci.repository(vm), TAG_HIBERNATE);
  assert.ok(pushed, "the suspend pushed :hibernate");
  const [pod] = await setPods(env, ns, "be");
  assert.ok(pod?.metadata.uid);

  await patchSetSpec(env, ns, "be", { agent: { ...AGENT, backend: "firecracker" } });
  const failed = await waitPhase(env, ns, "be", "Failed");
  const ready = failed.status?.conditions?.find((c) => c.type === CONDITION_READY);
  assert.equal(ready?.reason, REASON_SNAPSHOT_INCOMPATIBLE);
  assert.match(
    ready?.message ?? "",
    new RegExp(
      `VM ${vm} .*backend cloud-hypervisor \\(the spec asks for firecracker\\)\\. The snapshots are kept: set spec\\.agent\\.backend back to cloud-hypervisor and the set resumes`,
    ),
  );
  // Events are recorded asynchronously: the Warning may land after the status.
  await waitFor(
    "a Warning naming the incompatibility",
    async () =>
      (await objectEvents(env, ns, "be")).find(
        (e) => e.reason === REASON_SNAPSHOT_INCOMPATIBLE && e.type === "Warning",
      ),
    10_000,
  );

  // Resumed without setting it back: still Failed, the pod still hibernated, nothing woken or dropped.
  const wakesBefore = sim.record.events({ vmName: vm }).length;
  await patchSetSpec(env, ns, "be", { suspend: false });
  await waitFor(
    "the resumed set judged at its new generation",
    async () => {
      const cs = await getSet(env, ns, "be");
      return cs.status?.observedGeneration === cs.metadata.generation && cs.status?.phase === "Failed"
        ? cs
        : undefined;
    },
    30_000,
  );
  const [held] = await setPods(env, ns, "be");
  assert.equal(held?.metadata.uid, pod.metadata.uid, "the hibernated pod is kept");
  assert.equal(held?.metadata.annotations?.[ANN_HIBERNATE], TRUE, "and is not woken");
  assert.equal(sim.record.events({ vmName: vm }).length, wakesBefore, "vk-cocoon was asked nothing");
  assert.equal((await oci.getManifest(oci.repository(vm), TAG_HIBERNATE))?.digest, pushed.digest);

  await patchSetSpec(env, ns, "be", { agent: { ...AGENT, backend: "cloud-hypervisor" } });
  await waitRunning(env, ns, "be", 1);
  const since = sim.record.events({ vmName: vm }).slice(wakesBefore);
  assert.deepEqual(
    since.filter((e) => e.kind !== "hibernate").map((e) => `${e.kind}/${e.podUID}/${e.snapshot?.digest}`),
    [`wake/${pod.metadata.uid}/${pushed.digest}`],
    `the same pod woke, from the suspend's snapshot: ${JSON.stringify(since)}`,
  );
  await waitFor(
    "the woken VM's :hibernate dropped",
    async () => ((await oci.getManifest(oci.repository(vm), TAG_HIBERNATE)) === null ? true : undefined),
    30_000,
  );
  // The proxy records an exchange once its answer has been read back, which may be after the tag is
  // gone from the registry's view.
  const deletes = await waitFor(
    "the proxy's record of the snapshot's DELETE",
    async () => {
      const seen = registry.requests.filter(
        (r) => r.method === "DELETE" && r.status === 202 && r.path.includes(`/v2/${vm}/`),
      );
      return seen.length > 0 ? seen : undefined;
    },
    10_000,
  );
  assert.deepEqual(
    deletes.map((r) => r.path),
    [`/v2/${vm}/manifests/${pushed.digest}`],
    "the suspend's snapshot dropped once, after the wake",
  );
  assert.ok((deletes[0]?.time ?? 0) >= (since.find((e) => e.kind === "wake")?.time ?? Infinity));
});

it("an edit that drifts the pod but not its snapshot's dependencies: on resume the old pod is not woken, its replacement restores the suspend's snapshot", async () => {
  const vm = `vk-${ns}-env-0`;
  const agent = { ...AGENT, envFrom: [{ configMapRef: { name: "settings-a" } }] };
  await createSet(env, ns, "env", { nodePool: pool, agent });
  await waitRunning(env, ns, "env", 1);
  await patchSetSpec(env, ns, "env", { suspend: true });
  await waitPhase(env, ns, "env", "Suspended");
  const pushed = await oci.getManifest(oci.repository(vm), TAG_HIBERNATE);
  assert.ok(pushed, "the suspend pushed :hibernate");
  const [old] = await setPods(env, ns, "env");
  const since = sim.record.events({ vmName: vm }).length;

  await patchSetSpec(env, ns, "env", {
    suspend: false,
    agent: { ...agent, envFrom: [{ configMapRef: { name: "settings-b" } }] },
  });
  await waitRunning(env, ns, "env", 1);
  const [replacement] = await setPods(env, ns, "env");
  assert.notEqual(replacement?.metadata.uid, old?.metadata.uid, "the drifted pod was rebuilt");
  const journal = sim.record.events({ vmName: vm }).slice(since);
  assert.deepEqual(
    journal.map(
      (e) => `${e.kind}/${e.podUID === old?.metadata.uid ? "old" : "new"}/${e.snapshot?.digest ?? ""}`,
    ),
    ["destroy/old/", `restore/new/${pushed.digest}`],
    `the old pod went hibernated, the new one restored the suspend's snapshot: ${JSON.stringify(journal)}`,
  );
});

/** Release-suspends `name` and waits for the seat freed: no pod left, Suspended, the tag pushed. */
async function releaseSuspended(name: string, vm: string) {
  await patchSetSpec(env, ns, name, { suspend: true });
  const cs = await waitFor(
    `${name} released`,
    async () => {
      const current = await getSet(env, ns, name);
      return current.status?.phase === "Suspended" && (await setPods(env, ns, name)).length === 0
        ? current
        : undefined;
    },
    60_000,
  );
  const pushed = await oci.getManifest(oci.repository(vm), TAG_HIBERNATE);
  assert.ok(pushed, "the suspend pushed :hibernate before the seat was freed");
  assert.deepEqual(
    reclaimOf(cs).releasedUnder?.[vm],
    { backend: "cloud-hypervisor", os: "linux", snapshotCompatibilityClass: "" },
    "the record says what the snapshot was taken under",
  );
  return pushed;
}

/** The restores of `vm` vk-cocoon made since journal entry `since`, as `kind/digest`. */
function restoresSince(vm: string, since: number): string[] {
  return sim.record
    .events({ vmName: vm })
    .slice(since)
    .filter((e) => e.kind !== "hibernate" && e.kind !== "destroy")
    .map((e) => `${e.kind}/${e.snapshot?.digest ?? ""}`);
}

it("release: a backend edit after the seat was freed keeps the snapshot, no wake pod is made while it stands, and setting it back wakes the main from that snapshot", {
  timeout: 150_000,
}, async () => {
  const vm = `vk-${ns}-relbe-0`;
  await createSet(env, ns, "relbe", { nodePool: pool, hibernatePolicy: "release", agent: AGENT });
  await waitRunning(env, ns, "relbe", 1);
  const pushed = await releaseSuspended("relbe", vm);
  const since = sim.record.events({ vmName: vm }).length;

  await patchSetSpec(env, ns, "relbe", { agent: { ...AGENT, backend: "firecracker" } });
  const failed = await waitPhase(env, ns, "relbe", "Failed", 30_000, true);
  const ready = failed.status?.conditions?.find((c) => c.type === CONDITION_READY);
  assert.equal(ready?.reason, REASON_SNAPSHOT_INCOMPATIBLE);
  assert.match(
    ready?.message ?? "",
    new RegExp(
      `VM ${vm} of pod ${ns}/relbe-0 was snapshotted under backend cloud-hypervisor \\(the spec asks for firecracker\\)\\. The snapshots are kept: set spec\\.agent\\.backend back to cloud-hypervisor and the set resumes`,
    ),
  );
  await waitFor(
    "a Warning naming the incompatibility",
    async () =>
      (await objectEvents(env, ns, "relbe")).find(
        (e) => e.reason === REASON_SNAPSHOT_INCOMPATIBLE && e.type === "Warning",
      ),
    10_000,
  );

  // Resumed without setting it back: still Failed, no wake pod, vk-cocoon asked nothing, the tag kept.
  await patchSetSpec(env, ns, "relbe", { suspend: false });
  await waitPhase(env, ns, "relbe", "Failed", 30_000, true);
  assert.deepEqual(await setPods(env, ns, "relbe"), [], "no wake pod is built from the edited spec");
  assert.deepEqual(restoresSince(vm, since), [], "vk-cocoon was asked nothing");
  assert.equal((await oci.getManifest(oci.repository(vm), TAG_HIBERNATE))?.digest, pushed.digest);

  await patchSetSpec(env, ns, "relbe", { agent: { ...AGENT, backend: "cloud-hypervisor" } });
  const woken = await waitRunning(env, ns, "relbe", 1);
  assert.deepEqual(
    restoresSince(vm, since),
    [`restore/${pushed.digest}`],
    `the main restored from the suspend's snapshot: ${JSON.stringify(sim.record.events({ vmName: vm }).slice(since))}`,
  );
  assert.equal(reclaimOf(woken).releasedUnder?.[vm], undefined, "the record of the dropped snapshot went");
  await waitFor(
    "the woken VM's :hibernate dropped",
    async () => ((await oci.getManifest(oci.repository(vm), TAG_HIBERNATE)) === null ? true : undefined),
    30_000,
  );
});

it("release: an OS edit after the seat was freed is held while suspended, and set back before the resume the main wakes from the same snapshot", {
  timeout: 150_000,
}, async () => {
  const vm = `vk-${ns}-relos-0`;
  await createSet(env, ns, "relos", { nodePool: pool, hibernatePolicy: "release", agent: AGENT });
  await waitRunning(env, ns, "relos", 1);
  const pushed = await releaseSuspended("relos", vm);
  const since = sim.record.events({ vmName: vm }).length;

  await patchSetSpec(env, ns, "relos", { agent: { ...AGENT, os: "windows" } });
  const failed = await waitPhase(env, ns, "relos", "Failed", 30_000, true);
  assert.match(
    failed.status?.conditions?.find((c) => c.type === CONDITION_READY)?.message ?? "",
    /under os linux \(the spec asks for windows\)\. The snapshots are kept: set spec\.agent\.os back to linux/,
  );

  await patchSetSpec(env, ns, "relos", { agent: { ...AGENT, os: "linux" } });
  await waitPhase(env, ns, "relos", "Suspended", 30_000, true);
  await patchSetSpec(env, ns, "relos", { suspend: false });
  await waitRunning(env, ns, "relos", 1);
  assert.deepEqual(restoresSince(vm, since), [`restore/${pushed.digest}`]);
});
