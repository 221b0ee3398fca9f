import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import { ANN_VM_NAME, LABEL_COCOONSET, LABEL_ROLE, LABEL_SLOT } from "../../../src/contract/keys.ts";
import { classifyPods, parseSlot, presentVMNames } from "../../../src/pass/classify.ts";

const OWNER = { name: "demo", uid: "test-uid" };

function pod(
  name: string,
  role: string | undefined,
  slot: string | undefined,
  opts: { uid?: string; controller?: boolean; deleting?: boolean } = {},
): Pod {
  const labels: Record<string, string> = { [LABEL_COCOONSET]: "demo" };
  if (role !== undefined) labels[LABEL_ROLE] = role;
  if (slot !== undefined) labels[LABEL_SLOT] = slot;
  return {
    metadata: {
      name,
      namespace: "ns",
      labels,
      annotations: { [ANN_VM_NAME]: `vk-ns-${name}` },
      ownerReferences: [
        {
          apiVersion: "cocoonset.cocoonstack.io/v1",
          kind: "CocoonSet",
          name: "demo",
          uid: opts.uid ?? OWNER.uid,
          controller: opts.controller ?? true,
        },
      ],
      deletionTimestamp: opts.deleting ? "2026-05-14T01:00:00Z" : undefined,
    },
    spec: { containers: [{ name: "agent" }] },
  };
}

describe("classifyPods", () => {
  it("groups main, sub-agents by slot and toolboxes by name", () => {
    const main = pod("demo-0", "main", "0");
    const sub1 = pod("demo-1", "sub-agent", "1");
    const sub2 = pod("demo-2", "sub-agent", "2");
    const tb = pod("demo-tb", "toolbox", "tb");
    const c = classifyPods([main, sub1, sub2, tb], OWNER);
    assert.equal(c.main, main);
    assert.deepEqual(
      [...c.subAgents.entries()],
      [
        [1, sub1],
        [2, sub2],
      ],
    );
    assert.deepEqual([...c.toolboxes.entries()], [["tb", tb]]);
    assert.deepEqual([...c.all.keys()], ["demo-0", "demo-1", "demo-2", "demo-tb"]);
    assert.deepEqual(c.terminating, []);
  });

  it("keeps a pod with no role only in the by-name map", () => {
    const c = classifyPods([pod("demo-x", undefined, undefined)], OWNER);
    assert.equal(c.main, undefined);
    assert.equal(c.subAgents.size + c.toolboxes.size, 0);
    assert.deepEqual([...c.all.keys()], ["demo-x"]);
  });

  it("drops pods this set does not control", () => {
    const c = classifyPods(
      [
        pod("demo-stale", "main", "0", { uid: "other-uid" }),
        pod("demo-1", "sub-agent", "1", { controller: false }),
      ],
      OWNER,
    );
    assert.equal(c.main, undefined);
    assert.equal(c.all.size, 0);
  });

  it("sets pods being deleted aside as terminating", () => {
    const deleting = pod("demo-1", "sub-agent", "1", { deleting: true });
    const c = classifyPods([pod("demo-0", "main", "0"), deleting], OWNER);
    assert.equal(c.subAgents.size, 0);
    assert.equal(c.all.has("demo-1"), false);
    assert.deepEqual(c.terminating, [deleting]);
  });

  it("leaves a sub-agent whose slot does not parse out of the slot map", () => {
    const c = classifyPods([pod("demo-x", "sub-agent", "x"), pod("demo-y", "sub-agent", undefined)], OWNER);
    assert.equal(c.subAgents.size, 0);
    assert.equal(c.all.size, 2);
  });

  it("lists the VM names of the present pods", () => {
    const c = classifyPods(
      [pod("demo-0", "main", "0"), pod("demo-1", "sub-agent", "1", { deleting: true })],
      OWNER,
    );
    assert.deepEqual(presentVMNames(c), new Set(["vk-ns-demo-0"]));
  });
});

describe("parseSlot", () => {
  it("reads the label as Go's ParseInt(label, 10, 32)", () => {
    assert.equal(parseSlot("3"), 3);
    assert.equal(parseSlot("+03"), 3);
    assert.equal(parseSlot("2147483647"), 2147483647);
    for (const label of [undefined, "", "1.5", " 1", "2147483648", "tb"])
      assert.equal(parseSlot(label), undefined);
  });
});
