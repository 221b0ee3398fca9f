import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RegistryError } from "../../../src/registry/index.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";

describe("FakeSnapshotRegistry", () => {
  it("stores, reads and deletes snapshots by tag or digest and records calls", async () => {
    const reg = new FakeSnapshotRegistry();
    const digest = reg.put("vk-ns-demo-0", "hibernate", "img:1");
    assert.equal(await reg.hasManifest("vk-ns-demo-0", "hibernate"), true);
    assert.equal((await reg.getSnapshot("vk-ns-demo-0", "hibernate"))?.baseImage, "img:1");
    assert.equal(await reg.getSnapshot("vk-ns-demo-0", "latest"), null);
    await reg.deleteManifest("vk-ns-demo-0", digest);
    assert.equal(reg.has("vk-ns-demo-0", "hibernate"), false);
    reg.put("vk-ns-demo-0", "latest");
    assert.equal(await reg.deleteIfPresent("vk-ns-demo-0", "latest"), true);
    assert.equal(await reg.deleteIfPresent("vk-ns-demo-0", "latest"), false);
    assert.deepEqual(reg.callsOf("deleteIfPresent"), ["vk-ns-demo-0:latest", "vk-ns-demo-0:latest"]);
    assert.equal(reg.calls.length, 6);
  });

  it("fails the calls failOn selects", async () => {
    const reg = new FakeSnapshotRegistry();
    reg.failOn = (call) =>
      call.op === "deleteManifest" ? FakeSnapshotRegistry.error(405, "UNSUPPORTED") : undefined;
    assert.equal(await reg.hasManifest("vm", "hibernate"), false);
    await assert.rejects(reg.deleteManifest("vm", "hibernate"), (err: unknown) => {
      assert.ok(err instanceof RegistryError);
      assert.equal(err.status, 405);
      return true;
    });
  });
});
