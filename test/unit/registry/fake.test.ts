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
    await reg.deleteManifest("vk-ns-demo-0", "hibernate");
    assert.equal(reg.has("vk-ns-demo-0", "hibernate"), false);
    await reg.deleteManifest("vk-ns-demo-0", digest);
    reg.put("vk-ns-demo-0", "latest");
    assert.equal(await reg.deleteIfPresent("vk-ns-demo-0", "latest"), true);
    assert.equal(await reg.deleteIfPresent("vk-ns-demo-0", "latest"), false);
    assert.deepEqual(reg.callsOf("deleteIfPresent"), ["vk-ns-demo-0:latest", "vk-ns-demo-0:latest"]);
    assert.equal(reg.calls.length, 7);
  });

  it("deletes as the client does: a tag goes alone, a digest another tag names is refused", async () => {
    const reg = new FakeSnapshotRegistry();
    const shared = reg.put("vk-ns-demo-0", "hibernate");
    assert.equal(reg.alias("vk-ns-demo-0", "hibernate", "ckpt-c2"), shared);
    await assert.rejects(reg.deleteManifest("vk-ns-demo-0", shared), /MANIFEST_TAGGED/);
    await reg.deleteTagAt("vk-ns-demo-0", "hibernate", shared);
    assert.equal(reg.has("vk-ns-demo-0", "hibernate"), false);
    assert.equal(reg.has("vk-ns-demo-0", "ckpt-c2"), true, "the other tag keeps the manifest");
    reg.put("vk-ns-demo-0", "hibernate");
    await reg.deleteTagAt("vk-ns-demo-0", "hibernate", shared);
    assert.equal(reg.has("vk-ns-demo-0", "hibernate"), true, "a manifest pushed under the tag since stays");
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
