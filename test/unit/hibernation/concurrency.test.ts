// CRs that reach one VM never run their passes concurrently, and the striped lock itself.
// Each test holds the first pass inside a gated call and checks that the second pass has made no
// call past its lock meanwhile; without the lock it would have written by then.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { REASON_FOREIGN_VM_NAME_IGNORED } from "../../../src/contract/vmname.ts";
import type { ResourceType } from "../../../src/controller/resources.ts";
import { StripedLock } from "../../../src/hibernation/vmlock.ts";
import type { SnapshotRegistry } from "../../../src/registry/index.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import { FakeClient } from "../../support/fakeclient.ts";
import { Harness, settle, VM } from "./support.ts";

/** A gate the test opens; calls wait on it while it is closed. */
class Gate {
  private open: () => void = () => {};
  readonly opened = new Promise<void>((resolve) => {
    this.open = resolve;
  });

  release(): void {
    this.open();
  }
}

/** Counts registry calls in flight, each held until the gate opens. */
class GatedRegistry implements SnapshotRegistry {
  readonly inner = new FakeSnapshotRegistry();
  readonly gate = new Gate();
  inFlight = 0;
  maxInFlight = 0;

  private async held<T>(call: () => Promise<T>): Promise<T> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await this.gate.opened;
      return await call();
    } finally {
      this.inFlight--;
    }
  }

  hasManifest(repo: string, tag: string) {
    return this.held(() => this.inner.hasManifest(repo, tag));
  }
  getSnapshot(repo: string, tag: string) {
    return this.held(() => this.inner.getSnapshot(repo, tag));
  }
  deleteManifest(repo: string, ref: string) {
    return this.held(() => this.inner.deleteManifest(repo, ref));
  }
  deleteIfPresent(repo: string, tag: string) {
    return this.held(() => this.inner.deleteIfPresent(repo, tag));
  }
  headManifest(repo: string, ref: string) {
    return this.held(() => this.inner.headManifest(repo, ref));
  }
  deleteTagAt(repo: string, tag: string, digest: string) {
    return this.held(() => this.inner.deleteTagAt(repo, tag, digest));
  }
}

/** Holds every Update until the gate opens. */
class GatedUpdateClient extends FakeClient {
  readonly gate = new Gate();

  override async update<T>(rt: ResourceType, obj: T & { metadata: { name?: string; namespace?: string } }) {
    await this.gate.opened;
    return super.update<T>(rt, obj);
  }
}

describe("per-VM serialisation", () => {
  test("a Hibernate CR and a Wake CR on one live pod never overlap", async () => {
    const registry = new GatedRegistry();
    const h = new Harness({ registry });
    h.seedPod({ running: true, vmID: "vmid-1", lifecycle: { state: "ready" } });
    h.seedHibernation({ name: "b", desire: "Wake" });
    h.seedHibernation({ name: "a", desire: "Hibernate" });

    const wake = h.reconcile("b"); // reaches the tag drop and is held there
    const hibernate = h.reconcile("a");
    await settle();

    assert.equal(registry.inFlight, 1);
    assert.deepEqual(h.client.writes(), [], "the Hibernate pass must wait for the VM");

    registry.gate.release();
    await Promise.all([wake, hibernate]);
    assert.equal(registry.maxInFlight, 1);
    assert.equal(h.hibernation("b")?.status?.phase, "Active");
    assert.equal(h.hibernation("a")?.status?.phase, "Hibernating");
  });

  test("a deleting CR and a live CR on the same VM are serialised", async () => {
    const client = new GatedUpdateClient();
    const h = new Harness({ client });
    h.seedPod();
    h.seedHibernation({ name: "a", deleting: true, vmName: VM, phase: "Hibernated" });
    h.seedHibernation({ name: "b", desire: "Hibernate" });

    const deleting = h.reconcile("a"); // keeps the tag (b holds the VM), held in its finalizer Update
    const live = h.reconcile("b");
    await settle();

    assert.deepEqual(
      h.client.calls.map((c) => `${c.verb} ${c.resource}`),
      [],
      "the live pass must not patch the pod while the delete holds the VM",
    );

    client.gate.release();
    await Promise.all([deleting, live]);
    assert.equal(h.hibernation("a"), undefined);
    assert.equal(h.hibernation("b")?.status?.phase, "Hibernating");
  });

  test("a deleting CR whose status names another pod's VM leaves that VM's tag, with a Warning", async () => {
    const h = new Harness();
    h.seedHibernation({ name: "a", deleting: true, podRef: "demo-1", vmName: VM });
    h.registry.put(VM, "hibernate");

    await h.reconcile("a");
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), []);
    assert.equal(h.registry.has(VM, "hibernate"), true);
    assert.deepEqual(
      h.events.events.map((e) => [e.type, e.reason]),
      [["Warning", REASON_FOREIGN_VM_NAME_IGNORED]],
    );
  });

  test("CRs on different VMs run side by side", async () => {
    const registry = new GatedRegistry();
    const h = new Harness({ registry });
    for (const slot of [0, 1]) {
      h.seedPod({
        name: `demo-${slot}`,
        vmName: `vk-ns-demo-${slot}`,
        hibernate: true,
        lifecycle: { state: "hibernated" },
      });
      h.seedHibernation({ name: `demo-${slot}`, podRef: `demo-${slot}` });
    }
    // Both passes are held in their probe; had the two names shared a stripe, one would wait at the lock.
    const passes = [h.reconcile("demo-0"), h.reconcile("demo-1")];
    await settle();
    assert.equal(registry.inFlight, 2);
    registry.gate.release();
    await Promise.all(passes);
  });
});

describe("StripedLock", () => {
  test("a key's holders run one at a time, in arrival order", async () => {
    const lock = new StripedLock();
    const order: string[] = [];
    const first = await lock.acquire("vm");
    const second = lock.acquire("vm").then((release) => {
      order.push("second");
      release();
    });
    const third = lock.acquire("vm").then((release) => {
      order.push("third");
      release();
    });
    await settle();
    assert.deepEqual(order, []);
    first();
    await Promise.all([second, third]);
    assert.deepEqual(order, ["second", "third"]);
  });

  test("with one stripe every key shares the lock", async () => {
    const lock = new StripedLock(1);
    const release = await lock.acquire("a");
    let acquired = false;
    const other = lock.acquire("b").then((r) => {
      acquired = true;
      r();
    });
    await settle();
    assert.equal(acquired, false);
    release();
    await other;
    assert.equal(acquired, true);
  });
});
