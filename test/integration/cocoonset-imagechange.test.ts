// An image edit while suspended, end to end on the simulator and a real registry, with the operator's
// registry traffic journalled by the registry proxy: the retained main's `:hibernate` snapshot was
// pushed from the old image, so the snapshot image rule gives it up (the spec's exception to "a
// snapshot goes only after its VM runs again"). The old main drifted from the spec and is rebuilt, so
// step 10 does not wake it: it goes without ever running again, the image rule deletes the manifest
// by the digest its GET read, and the new main boots fresh on the new image. A wake of the old pod
// would be cut short by that drop (WakePullFailed … manifest not found); none is started.

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
    // A slow wake: a wake of the old pod, had one started, would still be pulling when the tag goes, and
    // show as a refusal.
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

it("an image edit while suspended drops the old snapshot by digest and never wakes the old pod", async () => {
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
  // A client that has not yet seen the registry refuse a tag delete tries the tag first (400).
  assert.deepEqual(
    deletes.filter((r) => r.status !== 400).map((r) => `${r.path} ${r.status}`),
    [`/v2/${vm}/manifests/${pushed.digest} 202`],
    "the image rule deleted the old snapshot once, by the digest of the suspend's push",
  );
  assert.ok(
    deletes.every((r) => r.status !== 400 || r.path === `/v2/${vm}/manifests/${TAG_HIBERNATE}`),
    "the only refused delete is of the tag itself",
  );
  assert.equal(await oci.getManifest(oci.repository(vm), TAG_HIBERNATE), null);
  const first = sim.record.events({ vmName: vm }).find((e) => e.podUID !== oldPod);
  assert.equal(first?.kind, "boot", "the new main boots fresh on the new image");

  await waitFor(
    "the old pod gone",
    async () => sim.record.events({ podUID: oldPod, kind: "destroy" }).length > 0 || undefined,
    30_000,
  );
  assert.deepEqual(
    sim.record
      .events({ podUID: oldPod })
      .filter((e) => e.time > hibernated.time)
      .map((e) => `${e.kind} ${e.vmID}`),
    ["destroy "],
    "the old pod was deleted hibernated: no wake started, none refused",
  );
  checker.check();
});
