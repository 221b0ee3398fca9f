// An image edit while suspended, end to end on the simulator and a real registry, with the operator's
// registry traffic journalled by the registry proxy: the retained main's `:hibernate` snapshot was
// pushed from the old image, so the snapshot image rule gives it up (the spec's exception to "a
// snapshot goes only after its VM runs again"). Step 10 clears the old pod's hibernate annotation
// (every owned pod's but a CocoonHibernation's target's), so vk-cocoon starts waking the old VM;
// step 11 deletes the drifted main, and the next pass, finding the main terminating, runs the image
// rule before its create attempt and deletes the manifest by the digest its GET read. A wake still
// pulling then fails (WakePullFailed … manifest not found): the refusal chaos seeds 1407079737 and
// 1360377925 showed, whose timelines carried that drop only as `DELETE <vm>:sha256:…`. The slow wake
// makes the race certain here; in the chaos run it is a matter of timing.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, it } from "node:test";
import { TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { OciClient, type Simulator } from "../env/simulator/index.ts";
import { testEnv, waitFor } from "../env/testenv.ts";
import { type RegistryProxy, startRegistryProxy } from "../support/faultproxy.ts";
import { InvariantChecker } from "../support/invariants.ts";
import { patchSetSpec } from "../support/setapi.ts";
import {
  createSet,
  E2E_IMAGE,
  type SetEnv,
  startSetEnv,
  waitPhase,
  waitRunning,
} from "../support/setwait.ts";

const NEW_IMAGE = `${E2E_IMAGE}:v2`;
const env = testEnv();
const oci = new OciClient(env.registry);
const pool = `imgchange-${randomBytes(3).toString("hex")}`;
let ns: string;
let sim: Simulator;
let registry: RegistryProxy;
let e2e: SetEnv | undefined;
let checker: InvariantChecker;

before(async () => {
  e2e = await startSetEnv(env, "imgchange", {
    pool,
    // A slow wake keeps the old pod's wake in flight while the operator deletes the pod and drops the tag.
    timings: { wakeMs: 1500 },
    beforeOperator: async ({ sim }) => {
      registry = await startRegistryProxy(env.registry);
      checker = new InvariantChecker({ record: sim.record, registry });
      return { registryBase: registry.host };
    },
  });
  ({ ns, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
  await registry?.stop();
});

it("an image edit while suspended drops the old snapshot by digest while the old pod may still wake from it", async () => {
  const vm = `vk-${ns}-img-0`;
  await createSet(env, ns, "img", { nodePool: pool });
  await waitRunning(env, ns, "img", 1);
  await patchSetSpec(env, ns, "img", { suspend: true });
  await waitPhase(env, ns, "img", "Suspended");
  const [hibernated] = sim.record.events({ kind: "hibernate", vmName: vm });
  assert.ok(hibernated, "the main hibernated");
  const pushed = await oci.getManifest(oci.repository(vm), TAG_HIBERNATE);
  assert.ok(pushed, "the suspend pushed :hibernate");
  const oldPod = hibernated.podUID;
  checker.allowImageDrop(vm);

  await patchSetSpec(env, ns, "img", { agent: { image: NEW_IMAGE, replicas: 0, mode: "clone" } });
  await patchSetSpec(env, ns, "img", { suspend: false });
  await waitRunning(env, ns, "img", 1);

  const deletes = registry.requests.filter((r) => r.method === "DELETE" && r.path.includes(`/v2/${vm}/`));
  assert.deepEqual(
    deletes.map((r) => `${r.path} ${r.status}`),
    [`/v2/${vm}/manifests/${pushed.digest} 202`],
    "the image rule deleted the old snapshot once, by the digest of the suspend's push",
  );
  assert.equal(await oci.getManifest(oci.repository(vm), TAG_HIBERNATE), null);
  const first = sim.record.events({ vmName: vm }).find((e) => e.podUID !== oldPod);
  assert.equal(first?.kind, "boot", "the new main boots fresh on the new image");

  // What the old pod did after its annotation was cleared: a wake that lost the race to the drop is
  // refused for the missing manifest, only after the operator's DELETE; the pod then goes without a VM.
  await waitFor(
    "the old pod's VM destroyed",
    async () => sim.record.events({ podUID: oldPod, kind: "destroy" }).length > 0 || undefined,
    30_000,
  );
  const dropAt = deletes[0]?.time ?? 0;
  const refusals = sim.record.events({ podUID: oldPod, kind: "refuse" });
  for (const e of refusals) {
    assert.match(e.detail ?? "", /^WakePullFailed: pull \S+:hibernate: manifest not found$/);
    assert.ok(e.time >= dropAt, "a refused wake follows the drop");
  }
  // The chaos suite's checker allows exactly these refusals, and nothing else happened here.
  checker.check();
  assert.equal(checker.counts.imageChangeWakeRefusals, refusals.length);
});
