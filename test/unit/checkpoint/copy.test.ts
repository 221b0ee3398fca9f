// The one copy of a checkpoint member into a VM's `:hibernate`: within the checkpoint's own repository
// a manifest of its own (never the checkpoint tag's digest), across repositories the member's manifest
// as is; nothing written when it is in place. It replaces the live state of a suspended VM, so only
// the branch step and the restore reconciler may call it.
import assert from "node:assert/strict";
import { globSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { copyToHibernate } from "../../../src/checkpoint/copy.ts";
import type { BranchCopy } from "../../../src/checkpoint/members.ts";
import { FakeCheckpointRegistry } from "../../support/checkpointregistry.ts";

const signal = new AbortController().signal;
const owner = { namespace: "ns", setName: "demo" };

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

  it("is called by the branch step and the restore reconciler alone", () => {
    const root = join(import.meta.dirname, "..", "..", "..");
    const callers = globSync("src/**/*.ts", { cwd: root })
      .filter((file) => file !== "src/checkpoint/copy.ts")
      .filter((file) => /\bcopyToHibernate\b/.test(readFileSync(join(root, file), "utf8")))
      .sort();
    assert.deepEqual(callers, ["src/checkpoint/branch.ts", "src/restore/reconciler.ts"]);
  });
});
