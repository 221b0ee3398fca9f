// The one copy of a checkpoint member into a VM's `:hibernate`: within the checkpoint's own repository
// a manifest of its own (never the checkpoint tag's digest), across repositories the member's manifest
// as is; nothing written when it is in place. It replaces the live state of a suspended VM, so only
// the branch step and the restore reconciler may call it.
import assert from "node:assert/strict";
import { globSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { copyToHibernate } from "../../../src/checkpoint/copy.ts";
import { MANIFEST_ANN_BRANCH, MANIFEST_ANN_WRITE } from "../../../src/checkpoint/keys.ts";
import { checkpointManifest } from "../../../src/checkpoint/manifest.ts";
import type { BranchCopy } from "../../../src/checkpoint/members.ts";
import { FakeCheckpointRegistry } from "../../support/checkpointregistry.ts";

const signal = new AbortController().signal;
const owner = { namespace: "ns", name: "demo", uid: "uid-restore-1" };

function copyOf(registry: FakeCheckpointRegistry, from: string, to: string): BranchCopy {
  const digest = registry.push(from, "ckpt-ck", "ubuntu");
  return { member: { role: "main", slot: 0, vmName: from, digest }, targetVM: to };
}

describe("copyToHibernate", () => {
  it("within the checkpoint's repository writes a manifest of its own, once", async () => {
    const registry = new FakeCheckpointRegistry();
    const copy = copyOf(registry, "vk-ns-demo-0", "vk-ns-demo-0");
    registry.push("vk-ns-demo-0", "hibernate", "ubuntu");
    assert.deepEqual(await copyToHibernate(registry, copy, owner, signal), {
      landed: true,
      blobs: [],
      bytesSent: 0,
    });
    const written = registry.digestOf("vk-ns-demo-0", "hibernate");
    assert.notEqual(written, copy.member.digest, "deleting :hibernate by digest leaves the checkpoint tag");
    assert.equal(registry.digestOf("vk-ns-demo-0", "ckpt-ck"), copy.member.digest);
    registry.log.length = 0;
    assert.deepEqual(await copyToHibernate(registry, copy, owner, signal), {
      landed: false,
      blobs: [],
      bytesSent: 0,
    });
    assert.ok(!registry.log.some((l) => l.startsWith("put")), "in place: nothing written");
  });

  it("a restore from a checkpoint taken of an earlier restore writes a digest no checkpoint tag has", async () => {
    const registry = new FakeCheckpointRegistry();
    const vm = "vk-ns-demo-0";
    // Restore from c1 into the set's own repository, then checkpoint the result as c2, as the
    // checkpoint reconciler writes it.
    const c1 = copyOf(registry, vm, vm);
    await copyToHibernate(registry, c1, { ...owner, uid: "uid-restore-1" }, signal);
    const restored = await registry.getManifest(vm, "hibernate");
    const c2 = checkpointManifest(restored.raw, { namespace: "ns", name: "c2", uid: "uid-c2" });
    const c2Digest = await registry.putManifest(vm, "ckpt-c2", c2);

    const second = { member: { ...c1.member, digest: c2Digest }, targetVM: vm };
    assert.equal(
      (await copyToHibernate(registry, second, { ...owner, uid: "uid-restore-2" }, signal)).landed,
      true,
    );
    const hibernate = registry.digestOf(vm, "hibernate");
    assert.notEqual(hibernate, c2Digest, "`:hibernate` and `ckpt-c2` are two manifests");
    assert.deepEqual(registry.tagsNaming(vm, hibernate ?? ""), ["hibernate"]);
    // A retry of the same restore finds its own write in place.
    registry.log.length = 0;
    assert.equal(
      (await copyToHibernate(registry, second, { ...owner, uid: "uid-restore-2" }, signal)).landed,
      false,
    );
    assert.ok(!registry.log.some((l) => l.startsWith("put")));
  });

  it("a checkpoint drops the stamps of the restore whose `:hibernate` it copies", async () => {
    const registry = new FakeCheckpointRegistry();
    const vm = "vk-ns-demo-0";
    await copyToHibernate(registry, copyOf(registry, vm, vm), owner, signal);
    const restored = await registry.getManifest(vm, "hibernate");
    const checkpoint = JSON.parse(
      checkpointManifest(restored.raw, { namespace: "ns", name: "c2", uid: "uid-c2" }).toString("utf8"),
    );
    assert.equal(checkpoint.annotations[MANIFEST_ANN_BRANCH], undefined);
    assert.equal(checkpoint.annotations[MANIFEST_ANN_WRITE], "uid-c2");
  });

  it("across repositories copies the member's manifest under its digest, blobs first", async () => {
    const registry = new FakeCheckpointRegistry();
    const copy = copyOf(registry, "vk-ns-origin-0", "vk-ns-demo-0");
    const result = await copyToHibernate(registry, copy, owner, signal);
    assert.equal(result.landed, true);
    assert.deepEqual(result.blobs, ["mounted", "mounted"]);
    assert.equal(registry.digestOf("vk-ns-demo-0", "hibernate"), copy.member.digest);
    assert.deepEqual(
      registry.log.filter((l) => l.startsWith("mount") || l.startsWith("put")).map((l) => l.split(" ")[0]),
      ["mount", "mount", "put"],
    );
  });

  it("across repositories a copy already in place writes nothing and makes no blob available", async () => {
    const registry = new FakeCheckpointRegistry();
    const copy = copyOf(registry, "vk-ns-origin-0", "vk-ns-demo-0");
    await copyToHibernate(registry, copy, owner, signal);
    registry.log.length = 0;
    assert.deepEqual(await copyToHibernate(registry, copy, owner, signal), {
      landed: false,
      blobs: [],
      bytesSent: 0,
    });
    assert.deepEqual(
      registry.log.filter((l) => !l.startsWith("head")),
      [],
    );
  });

  it("is called by the branch step and the restore reconciler alone", () => {
    const root = join(import.meta.dirname, "..", "..", "..");
    const callers = globSync("src/**/*.ts", { cwd: root })
      .filter((file) => file !== "src/checkpoint/copy.ts")
      .filter((file) => /\bcopyToHibernate\b/.test(readFileSync(join(root, file), "utf8")))
      .sort();
    assert.deepEqual(callers, ["src/checkpoint/branch.ts", "src/restore/reconciler.ts"]);
  });
});
