// The unit tests' FakeClient behaves as the API server where reconcile paths depend on it: the same
// assertions run against the fake and against the real kube-apiserver, so the fake cannot drift.
// - a bound pod is only marked terminating (no kubelet finishes it), but a bound Failed or Succeeded
//   pod, and an unbound one, goes at once;
// - the first deletionTimestamp bumps metadata.generation (a later delete does not);
// - an update of a custom resource without metadata.resourceVersion is refused (a pod's is not);
// - a merge patch carrying metadata.uid is refused (422, the uid is immutable) when the object's differs;
// - no finalizer can be added to an object being deleted (update or merge patch); removing the last
//   finalizer of a deleting custom resource removes it.

import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import { type Client, KubeClient, kubeConfigFromFile } from "../../src/controller/client.ts";
import { InvalidError, isNotFound } from "../../src/controller/errors.ts";
import { COCOONSETS, PODS, type ResourceType } from "../../src/controller/resources.ts";
import { createNamespace, testEnv } from "../env/testenv.ts";
import { FakeClient } from "../support/fakeclient.ts";

const FINALIZER = "parity.test/hold";
const OTHER_FINALIZER = "parity.test/other";

interface Backend {
  name: string;
  connect(): Promise<{ client: Client; namespace: string }>;
}

const backends: Backend[] = [
  { name: "FakeClient", connect: async () => ({ client: new FakeClient(), namespace: "parity" }) },
  {
    name: "kube-apiserver",
    connect: async () => {
      const env = testEnv();
      return {
        client: new KubeClient(kubeConfigFromFile(env.kubeconfigPath)),
        namespace: await createNamespace(env, "parity"),
      };
    },
  },
];

function pod(name: string, nodeName?: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name },
    spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: "agent", image: "busybox" }] },
  } as Pod;
}

function cocoonSet(name: string, finalizers: string[] = []): CocoonSet {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, finalizers },
    spec: { agent: { image: "ghcr.io/cocoonstack/cocoon/ubuntu:24.04" } },
  };
}

async function gone(client: Client, rt: ResourceType, namespace: string, name: string): Promise<boolean> {
  try {
    await client.get(rt, namespace, name);
    return false;
  } catch (error) {
    if (isNotFound(error)) return true;
    throw error;
  }
}

async function releaseFinalizers(client: Client, namespace: string, name: string): Promise<void> {
  const cs = await client.get<CocoonSet>(COCOONSETS, namespace, name);
  await client.update(COCOONSETS, { ...cs, metadata: { ...cs.metadata, finalizers: [] } });
}

for (const backend of backends) {
  describe(`API server semantics the reconcilers rely on: ${backend.name}`, () => {
    let client: Client;
    let ns: string;

    before(async () => {
      ({ client, namespace: ns } = await backend.connect());
    });

    it("a bound Running pod is only marked terminating, and its first deletionTimestamp bumps generation", async () => {
      const created = await client.create<Pod>(PODS, ns, pod("bound-running", "parity-node"));
      await client.delete(PODS, ns, "bound-running");
      const terminating = await client.get<Pod>(PODS, ns, "bound-running");
      assert.equal(created.metadata.generation, 1);
      assert.ok(terminating.metadata.deletionTimestamp);
      assert.equal(terminating.metadata.generation, 2);

      await client.delete(PODS, ns, "bound-running");
      const again = await client.get<Pod>(PODS, ns, "bound-running");
      assert.equal(again.metadata.generation, terminating.metadata.generation);
      assert.equal(again.metadata.deletionTimestamp, terminating.metadata.deletionTimestamp);
    });

    for (const phase of ["Failed", "Succeeded"] as const) {
      it(`a bound ${phase} pod is deleted at once`, async () => {
        const name = `bound-${phase.toLowerCase()}`;
        await client.create<Pod>(PODS, ns, pod(name, "parity-node"));
        await client.patch(PODS, ns, name, { status: { phase } }, { subresource: "status" });
        await client.delete(PODS, ns, name);
        assert.ok(await gone(client, PODS, ns, name));
      });
    }

    it("an unbound pod is deleted at once", async () => {
      await client.create<Pod>(PODS, ns, pod("unbound"));
      await client.delete(PODS, ns, "unbound");
      assert.ok(await gone(client, PODS, ns, "unbound"));
    });

    it("a custom resource held by a finalizer: the first deletionTimestamp bumps generation, later deletes do not", async () => {
      const created = await client.create<CocoonSet>(COCOONSETS, ns, cocoonSet("held", [FINALIZER]));
      assert.equal(created.metadata.generation, 1);
      await client.delete(COCOONSETS, ns, "held");
      const deleting = await client.get<CocoonSet>(COCOONSETS, ns, "held");
      assert.ok(deleting.metadata.deletionTimestamp);
      assert.equal(deleting.metadata.generation, 2);
      await client.delete(COCOONSETS, ns, "held");
      assert.equal((await client.get<CocoonSet>(COCOONSETS, ns, "held")).metadata.generation, 2);

      await releaseFinalizers(client, ns, "held");
      assert.ok(await gone(client, COCOONSETS, ns, "held"));
    });

    it("an update of a custom resource without resourceVersion is refused; a pod's is accepted", async () => {
      const cs = await client.create<CocoonSet>(COCOONSETS, ns, cocoonSet("unconditional"));
      const { resourceVersion: _csVersion, ...csMeta } = cs.metadata;
      await assert.rejects(
        client.update(COCOONSETS, { ...cs, metadata: { ...csMeta, labels: { edited: "yes" } } }),
        (error) => error instanceof InvalidError && error.status === 422,
      );
      const unchanged = await client.get<CocoonSet>(COCOONSETS, ns, "unconditional");
      assert.equal(unchanged.metadata.labels?.edited, undefined);

      const created = await client.create<Pod>(PODS, ns, pod("unconditional-pod"));
      const { resourceVersion: _podVersion, ...podMeta } = created.metadata;
      await client.update(PODS, { ...created, metadata: { ...podMeta, labels: { edited: "yes" } } });
      assert.equal((await client.get<Pod>(PODS, ns, "unconditional-pod")).metadata.labels?.edited, "yes");
    });

    it("a merge patch naming another uid is refused as invalid and changes nothing", async () => {
      const created = await client.create<Pod>(PODS, ns, pod("uid-guarded"));
      await assert.rejects(
        client.patch(PODS, ns, "uid-guarded", {
          metadata: { uid: "00000000-0000-0000-0000-000000000000", annotations: { stale: "yes" } },
        }),
        (error) =>
          error instanceof InvalidError && error.status === 422 && /metadata\.uid/.test(error.message),
      );
      assert.equal((await client.get<Pod>(PODS, ns, "uid-guarded")).metadata.annotations?.stale, undefined);
      await client.patch(PODS, ns, "uid-guarded", {
        metadata: { uid: created.metadata.uid, annotations: { current: "yes" } },
      });
      assert.equal((await client.get<Pod>(PODS, ns, "uid-guarded")).metadata.annotations?.current, "yes");
    });

    it("no finalizer can be added to an object being deleted, by update or by merge patch", async () => {
      await client.create<CocoonSet>(COCOONSETS, ns, cocoonSet("closing", [FINALIZER]));
      await client.delete(COCOONSETS, ns, "closing");
      const deleting = await client.get<CocoonSet>(COCOONSETS, ns, "closing");
      const isForbiddenFinalizer = (error: unknown) => error instanceof InvalidError && error.status === 422;

      await assert.rejects(
        client.update(COCOONSETS, {
          ...deleting,
          metadata: { ...deleting.metadata, finalizers: [FINALIZER, OTHER_FINALIZER] },
        }),
        isForbiddenFinalizer,
      );
      await assert.rejects(
        client.patch(COCOONSETS, ns, "closing", { metadata: { finalizers: [FINALIZER, OTHER_FINALIZER] } }),
        isForbiddenFinalizer,
      );
      assert.deepEqual((await client.get<CocoonSet>(COCOONSETS, ns, "closing")).metadata.finalizers, [
        FINALIZER,
      ]);

      await releaseFinalizers(client, ns, "closing");
      assert.ok(await gone(client, COCOONSETS, ns, "closing"));
    });
  });
}
