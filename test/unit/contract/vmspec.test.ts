import assert from "node:assert/strict";
import { test } from "node:test";
import {
  applyVMSpec,
  parseVMSpec,
  type VMSpec,
  vmSpecEqual,
  vmSpecFromAgent,
  vmSpecFromToolbox,
} from "../../../src/contract/vmspec.ts";

const FULL: VMSpec = {
  vmName: "vk-ns-demo-1",
  image: "ubuntu:24.04",
  mode: "clone",
  os: "windows",
  storage: "100G",
  network: "net-a",
  snapshotPolicy: "main-only",
  managed: true,
  forcePull: true,
  forkFrom: "vk-ns-demo-0",
  connType: "rdp",
  backend: "firecracker",
  noDirectIO: true,
  probePort: "8080",
};

test("applyVMSpec writes every key and parseVMSpec reads them back", () => {
  const annotations: Record<string, string> = {};
  applyVMSpec(annotations, FULL);
  assert.deepEqual(annotations, {
    "vm.cocoonstack.io/name": "vk-ns-demo-1",
    "cocoonset.cocoonstack.io/image": "ubuntu:24.04",
    "cocoonset.cocoonstack.io/mode": "clone",
    "cocoonset.cocoonstack.io/os": "windows",
    "cocoonset.cocoonstack.io/storage": "100G",
    "cocoonset.cocoonstack.io/network": "net-a",
    "cocoonset.cocoonstack.io/snapshot-policy": "main-only",
    "cocoonset.cocoonstack.io/managed": "true",
    "cocoonset.cocoonstack.io/force-pull": "true",
    "vm.cocoonstack.io/fork-from": "vk-ns-demo-0",
    "vm.cocoonstack.io/conn-type": "rdp",
    "vm.cocoonstack.io/backend": "firecracker",
    "vm.cocoonstack.io/no-direct-io": "true",
    "vm.cocoonstack.io/probe-port": "8080",
  });
  assert.deepEqual(parseVMSpec(annotations), FULL);
});

test("applyVMSpec skips empty strings and false booleans and never deletes", () => {
  const annotations: Record<string, string> = { "cocoonset.cocoonstack.io/managed": "true", other: "x" };
  const empty = parseVMSpec({});
  applyVMSpec(annotations, { ...empty, vmName: "vk-a" });
  assert.deepEqual(annotations, {
    "cocoonset.cocoonstack.io/managed": "true",
    other: "x",
    "vm.cocoonstack.io/name": "vk-a",
  });
});

test("parseVMSpec reads booleans only from the exact string true", () => {
  const spec = parseVMSpec({
    "cocoonset.cocoonstack.io/managed": "True",
    "cocoonset.cocoonstack.io/force-pull": "1",
  });
  assert.equal(spec.managed, false);
  assert.equal(spec.forcePull, false);
  assert.equal(spec.vmName, "");
});

test("vmSpecFromAgent applies the Go defaults", () => {
  const spec = vmSpecFromAgent({ image: "ubuntu:24.04" }, "vk-ns-demo-0", undefined, "");
  assert.deepEqual(spec, {
    vmName: "vk-ns-demo-0",
    image: "ubuntu:24.04",
    mode: "clone",
    os: "linux",
    storage: "",
    network: "",
    snapshotPolicy: "always",
    managed: true,
    forcePull: false,
    forkFrom: "",
    connType: "",
    backend: "cloud-hypervisor",
    noDirectIO: false,
    probePort: "",
  });
});

test("vmSpecFromAgent canonicalises storage and formats the probe port", () => {
  const spec = vmSpecFromAgent(
    { image: "i", storage: "1024Mi", probePort: 22, mode: "run", connType: "ssh" },
    "vk",
    "never",
    "vk-main",
  );
  assert.equal(spec.storage, "1Gi");
  assert.equal(spec.probePort, "22");
  assert.equal(spec.mode, "run");
  assert.equal(spec.connType, "ssh");
  assert.equal(spec.snapshotPolicy, "never");
  assert.equal(spec.forkFrom, "vk-main");
  assert.equal(vmSpecFromAgent({ image: "i", probePort: 0 }, "vk", "", "").probePort, "");
});

test("vmSpecFromToolbox: run by default, managed unless the raw mode is static", () => {
  const run = vmSpecFromToolbox({ name: "tb", image: "x" }, "vk-ns-demo-tb", "always");
  assert.equal(run.mode, "run");
  assert.equal(run.managed, true);
  assert.equal(run.forkFrom, "");
  const stat = vmSpecFromToolbox({ name: "tb", mode: "static" }, "vk-ns-demo-tb", "always");
  assert.equal(stat.mode, "static");
  assert.equal(stat.managed, false);
  assert.equal(stat.image, "");
});

test("vmSpecEqual compares all 14 fields", () => {
  assert.equal(vmSpecEqual(FULL, { ...FULL }), true);
  for (const field of Object.keys(FULL) as (keyof VMSpec)[]) {
    const changed = { ...FULL, [field]: typeof FULL[field] === "boolean" ? !FULL[field] : `${FULL[field]}x` };
    assert.equal(vmSpecEqual(FULL, changed), false, field);
  }
});
