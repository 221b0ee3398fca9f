import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../../src/apis/core.ts";
import type { CocoonSetStatus } from "../../../../src/apis/v1/types.ts";
import {
  mergeDeleteVMNames,
  statusVMNames,
  vmNamesToStash,
} from "../../../../src/cocoonset/decide/deletevmnames.ts";
import { ANN_VM_NAME } from "../../../../src/contract/keys.ts";
import { EMPTY_RECLAIM } from "../../../../src/pass/reclaimrecord.ts";
import { parseDeleteVMNames } from "../../../../src/pass/setvms.ts";

function pod(vm?: string): Pod {
  return { metadata: { name: "p", annotations: vm ? { [ANN_VM_NAME]: vm } : {} }, spec: { containers: [] } };
}

describe("parseDeleteVMNames", () => {
  it("splits on commas, trims whitespace and drops empties", () => {
    assert.deepEqual(parseDeleteVMNames(" vk-a , ,vk-b,"), ["vk-a", "vk-b"]);
    assert.deepEqual(parseDeleteVMNames(undefined), []);
    assert.deepEqual(parseDeleteVMNames(""), []);
  });
});

describe("mergeDeleteVMNames", () => {
  it("writes the sorted, comma-joined union", () => {
    assert.equal(
      mergeDeleteVMNames("vk-ns-demo-1", ["vk-ns-demo-tb", "vk-ns-demo-0", "vk-ns-demo-1"]),
      "vk-ns-demo-0,vk-ns-demo-1,vk-ns-demo-tb",
    );
  });

  it("skips the patch when nothing changes", () => {
    assert.equal(mergeDeleteVMNames("vk-a,vk-b", ["vk-b", " vk-a "]), undefined);
  });

  it("skips the patch when there is nothing to store", () => {
    assert.equal(mergeDeleteVMNames(undefined, []), undefined);
    assert.equal(mergeDeleteVMNames("", [" "]), undefined);
  });

  it("skips the patch when the only new names are blank", () => {
    assert.equal(mergeDeleteVMNames("vk-a", ["", " "]), undefined);
  });

  it("rewrites an untidy value in canonical form", () => {
    assert.equal(mergeDeleteVMNames("vk-b, vk-a", []), "vk-a,vk-b");
  });
});

describe("names to stash", () => {
  const status: CocoonSetStatus = {
    readyAgents: 0,
    desiredAgents: 2,
    readyToolboxes: 0,
    desiredToolboxes: 1,
    agents: [
      { slot: 0, role: "main", vmName: "vk-ns-demo-0" },
      { slot: 1, role: "sub-agent" },
    ],
    toolboxes: [{ name: "tb", vmName: "vk-ns-demo-tb" }],
  };

  it("lists the status's agent then toolbox VM names", () => {
    assert.deepEqual(statusVMNames(status), ["vk-ns-demo-0", "vk-ns-demo-tb"]);
    assert.deepEqual(statusVMNames(undefined), []);
  });

  it("lists no name for a toolbox entry without a VM, and the stash still merges", () => {
    const unnamed: CocoonSetStatus = { ...status, toolboxes: [{ name: "tb" }] };
    assert.deepEqual(statusVMNames(unnamed), ["vk-ns-demo-0"]);
    assert.equal(mergeDeleteVMNames(undefined, statusVMNames(unnamed)), "vk-ns-demo-0");
  });

  it("takes the status, the pods' VMs and the reclaim record's VMs", () => {
    const names = vmNamesToStash(status, [pod("vk-ns-demo-1"), pod()], {
      ...EMPTY_RECLAIM,
      vms: ["vk-ns-demo-2"],
    });
    assert.equal(
      mergeDeleteVMNames(undefined, names),
      "vk-ns-demo-0,vk-ns-demo-1,vk-ns-demo-2,vk-ns-demo-tb",
    );
  });
});
