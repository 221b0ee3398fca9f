// A set's teardown and refusal stay within the set, end to end on the real API server, registry and
// vk-cocoon simulator: a set whose delete-vm-names lists another namespace's VM is deleted and that
// VM's :hibernate survives, with a Warning naming the name it ignored; a set whose VM names collide
// with an earlier set's is refused (Failed, VMNameCollision, no pod) while the earlier set runs on,
// and its teardown leaves the shared VM's tag alone.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { REASON_VM_NAME_COLLISION } from "../../src/cocoonset/steps/collision.ts";
import { ANN_DELETE_VM_NAMES, ANN_HIBERNATE_RECLAIM, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { agentVMName, REASON_FOREIGN_VM_NAME_IGNORED, toolboxVMName } from "../../src/contract/vmname.ts";
import { OciClient, pushSnapshot } from "../env/simulator/index.ts";
import { apiRequest, createNamespace, testEnv, waitFor } from "../env/testenv.ts";
import { getSet, objectEvents, setPods, setsPath } from "../support/setapi.ts";
import {
  createSet,
  E2E_IMAGE,
  hasHibernateTag,
  type SetEnv,
  startSetEnv,
  waitPhase,
  waitRunning,
} from "../support/setwait.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
let e2e: SetEnv | undefined;
let ns: string;
let pool: string;

before(async () => {
  e2e = await startSetEnv(env, "tenant");
  ({ ns, pool } = e2e);
});

after(async () => {
  await e2e?.stop();
});

async function pushHibernate(vmName: string): Promise<void> {
  await pushSnapshot(oci, {
    vmName,
    vmID: `of-${vmName}`,
    tag: TAG_HIBERNATE,
    baseImage: E2E_IMAGE,
    fromNode: "",
  });
}

async function annotate(name: string, annotations: Record<string, string>): Promise<void> {
  const res = await apiRequest(
    env,
    "PATCH",
    `${setsPath(ns)}/${name}`,
    { metadata: { annotations } },
    "application/merge-patch+json",
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

async function deleteAndWaitGone(name: string): Promise<void> {
  const res = await apiRequest(env, "DELETE", `${setsPath(ns)}/${name}`);
  assert.ok(res.status === 200 || res.status === 202, JSON.stringify(res.body));
  await waitFor(`${name} to be gone`, async () => {
    const got = await apiRequest(env, "GET", `${setsPath(ns)}/${name}`);
    return got.status === 404 ? true : undefined;
  });
}

describe("tenant boundaries", () => {
  it("a set listing another namespace's VM is deleted, and that VM's :hibernate survives with a Warning naming it", async () => {
    // Namespace B's hibernated VM, which nobody in this namespace may reach.
    const other = await createNamespace(env, "tenantb");
    const foreign = agentVMName(other, "prod", 0);
    const pathOut = `vk-${ns}-grab-../${foreign}`;
    await pushHibernate(foreign);
    const own = agentVMName(ns, "grab", 0);

    await createSet(env, ns, "grab", { nodePool: pool });
    await waitRunning(env, ns, "grab", 1);
    // Written as the operator would write them (no admission policy here): a stash and a record
    // naming B's VM, and a path out of the set's own names.
    await annotate("grab", {
      [ANN_DELETE_VM_NAMES]: [own, foreign].join(","),
      [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ generation: 1, vms: [pathOut] }),
    });
    await pushHibernate(own);
    await deleteAndWaitGone("grab");

    assert.equal(await hasHibernateTag(oci, foreign), true, "namespace B's snapshot survives");
    assert.equal(await hasHibernateTag(oci, own), false, "the set's own snapshot is collected");
    const warning = await waitFor("the Warning naming the ignored names", async () =>
      (await objectEvents(env, ns, "grab")).find((e) => e.reason === REASON_FOREIGN_VM_NAME_IGNORED),
    );
    assert.equal(warning?.type, "Warning");
    assert.ok(warning?.message.includes(foreign), warning?.message);
    assert.ok(warning?.message.includes(pathOut), warning?.message);
  });

  it("a later set whose main VM is an earlier set's toolbox VM is refused, the earlier runs on, and the refused set's teardown leaves the tag", async () => {
    // web's toolbox "2-0" is VM vk-<ns>-web-2-0, the name web-2's main would take.
    await createSet(env, ns, "web", { nodePool: pool, toolboxes: [{ name: "2-0", image: E2E_IMAGE }] });
    await waitRunning(env, ns, "web", 1, 1);
    const shared = toolboxVMName(ns, "web", "2-0");
    assert.equal(shared, agentVMName(ns, "web-2", 0));

    await createSet(env, ns, "web-2", { nodePool: pool });
    const refused = await waitPhase(env, ns, "web-2", "Failed");
    const ready = refused.status?.conditions?.find((c) => c.type === "Ready");
    assert.equal(ready?.reason, REASON_VM_NAME_COLLISION);
    assert.ok(ready?.message.includes(`${shared} (CocoonSet ${ns}/web)`), ready?.message);
    const event = await waitFor("the refusal's Warning", async () =>
      (await objectEvents(env, ns, "web-2")).find((e) => e.reason === REASON_VM_NAME_COLLISION),
    );
    assert.equal(event?.type, "Warning");
    assert.deepEqual(await setPods(env, ns, "web-2"), [], "the refused set creates no pod");

    // The refused set's teardown: the shared VM's snapshot (standing for web's toolbox's) stays.
    await pushHibernate(shared);
    await annotate("web-2", { [ANN_DELETE_VM_NAMES]: shared });
    await deleteAndWaitGone("web-2");
    assert.equal(await hasHibernateTag(oci, shared), true);
    const web = await getSet(env, ns, "web");
    assert.equal(web.status?.phase, "Running", "the earlier set was never touched");
  });
});
