import assert from "node:assert/strict";
import { test } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import {
  agentPodName,
  agentVMName,
  agentVMNamePrefix,
  extractAgentSlot,
  inferRoleFromSlot,
  isOwnVMName,
  isPodVMName,
  partitionOwnVMNames,
  podVMName,
  roleForPod,
  toolboxPodName,
  toolboxVMName,
} from "../../../src/contract/vmname.ts";

test("names are plain concatenations", () => {
  assert.equal(agentVMName("prod", "demo", 0), "vk-prod-demo-0");
  assert.equal(agentVMName("prod", "demo", 12), "vk-prod-demo-12");
  assert.equal(podVMName("prod", "demo-db"), "vk-prod-demo-db");
  assert.equal(toolboxVMName("prod", "demo", "db"), "vk-prod-demo-db");
  assert.equal(agentVMNamePrefix("prod", "demo"), "vk-prod-demo-");
  assert.equal(agentPodName("demo", 3), "demo-3");
  assert.equal(toolboxPodName("demo", "db"), "demo-db");
});

test("extractAgentSlot follows Go's strconv.Atoi on the remainder", () => {
  const cases: [string, number][] = [
    ["vk-prod-demo-0", 0],
    ["vk-prod-demo-3", 3],
    ["vk-prod-demo-007", 7],
    ["vk-prod-demo-+3", 3],
    ["vk-prod-demo-db-2", -1],
    ["vk-prod-demo-db", -1],
    ["vk-prod-demo--1", -1],
    ["vk-prod-demo-", -1],
    ["vk-prod-demo-+", -1],
    ["vk-prod-demo-1.0", -1],
    ["vk-prod-demo-99999999999999999999", -1],
    ["vk-prod-other-0", -1],
    ["vk-dev-demo-0", -1],
  ];
  for (const [vmName, slot] of cases) assert.equal(extractAgentSlot("prod", "demo", vmName), slot, vmName);
});

test("inferRoleFromSlot maps negative, zero and positive slots", () => {
  assert.equal(inferRoleFromSlot(-1), "toolbox");
  assert.equal(inferRoleFromSlot(0), "main");
  assert.equal(inferRoleFromSlot(4), "sub-agent");
});

function ownedPod(owner: { kind: string; name: string } | undefined): Pod {
  return {
    metadata: {
      name: "p",
      namespace: "prod",
      ownerReferences: owner ? [{ apiVersion: "x/v1", uid: "u", ...owner }] : [],
    },
    spec: { containers: [] },
  };
}

test("roleForPod uses the CocoonSet owner and the slot parse", () => {
  const pod = ownedPod({ kind: "CocoonSet", name: "demo" });
  assert.equal(roleForPod(pod, "vk-prod-demo-0"), "main");
  assert.equal(roleForPod(pod, "vk-prod-demo-2"), "sub-agent");
  assert.equal(roleForPod(pod, "vk-prod-demo-db"), "toolbox");
  assert.equal(roleForPod(ownedPod({ kind: "ReplicaSet", name: "demo" }), "vk-prod-demo-0"), "toolbox");
  assert.equal(roleForPod(ownedPod(undefined), "vk-prod-demo-0"), "toolbox");
});

test("a set's own VM names are its vk-<ns>-<set>- names that are one valid repository component", () => {
  for (const vm of [
    "vk-prod-demo-0",
    "vk-prod-demo-12",
    "vk-prod-demo-db",
    "vk-prod-demo-db.x",
    "vk-prod-demo-a__b",
  ])
    assert.equal(isOwnVMName("prod", "demo", vm), true, vm);
  const foreign = [
    "vk-other-prod-0", // another namespace's set
    "vk-prod-demo2-0", // another set whose name only starts the same
    "vk-prod-demo-", // nothing after the prefix
    "vk-prod-demo-../vk-other-prod-0", // a path out of the prefix
    "vk-prod-demo-a/b", // a nested path
    "vk-prod-demo-a..b", // two dots
    "vk-prod-demo-A", // upper case
    "vk-prod-demo-a-", // a trailing separator
    "vk-prod-demo-a.", // a trailing dot
    "ubuntu", // a base image
    `vk-prod-demo-${"a".repeat(250)}`, // longer than a repository name may be
    "",
  ];
  for (const vm of foreign) assert.equal(isOwnVMName("prod", "demo", vm), false, vm);
});

test("partitionOwnVMNames keeps the order given on both sides", () => {
  assert.deepEqual(
    partitionOwnVMNames("prod", "demo", ["vk-b-x-0", "vk-prod-demo-1", "..", "vk-prod-demo-0"]),
    {
      own: ["vk-prod-demo-1", "vk-prod-demo-0"],
      foreign: ["vk-b-x-0", ".."],
    },
  );
});

test("a pod's own VM is vk-<ns>-<pod>, a valid repository name", () => {
  assert.equal(isPodVMName("prod", "demo-0", "vk-prod-demo-0"), true);
  assert.equal(isPodVMName("prod", "demo-0", "vk-b-prod-0"), false);
  assert.equal(isPodVMName("prod", "demo-1", "vk-prod-demo-0"), false);
  assert.equal(isPodVMName("prod", "", "vk-prod-"), false);
  assert.equal(isPodVMName("prod", "Demo", "vk-prod-Demo"), false);
});
