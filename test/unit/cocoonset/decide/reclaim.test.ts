import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../../src/apis/core.ts";
import {
  beginUnsuspend,
  finishUnsuspend,
  needsUnsuspendBookkeeping,
  recordSuspend,
  wokenRecordedVMs,
} from "../../../../src/cocoonset/decide/reclaim.ts";
import {
  ANN_HIBERNATE,
  ANN_LIFECYCLE_OBSERVED_GENERATION,
  ANN_LIFECYCLE_STATE,
  ANN_VM_ID,
  ANN_VM_NAME,
} from "../../../../src/contract/keys.ts";
import {
  dropVM,
  dropVMs,
  EMPTY_RECLAIM,
  encodeReclaim,
  isRecorded,
  oweRestores,
  owesRestore,
  type ReclaimRecord,
  readReclaim,
  reclaimPatchValue,
  recordVMs,
} from "../../../../src/pass/reclaimrecord.ts";

const VM0 = "vk-ns-demo-0";
const VM1 = "vk-ns-demo-1";
const VMTB = "vk-ns-demo-tb";

function record(fields: Partial<ReclaimRecord>): ReclaimRecord {
  return { ...EMPTY_RECLAIM, ...fields };
}

describe("reclaim codec", () => {
  const cases: { name: string; record: ReclaimRecord; encoded: string | null }[] = [
    {
      name: "no VMs removes the annotation",
      record: record({ generation: 4, restore: [VM0] }),
      encoded: null,
    },
    {
      name: "empty restore and suspended are omitted",
      record: record({ generation: 2, vms: [VM1, VM0] }),
      encoded: `{"generation":2,"vms":["${VM1}","${VM0}"]}`,
    },
    {
      name: "every list, in append order",
      record: record({ generation: 3, vms: [VM0, VM1], restore: [VM1], suspended: [VM0, VM1] }),
      encoded: `{"generation":3,"vms":["${VM0}","${VM1}"],"restore":["${VM1}"],"suspended":["${VM0}","${VM1}"]}`,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.equal(encodeReclaim(c.record), c.encoded);
      if (c.encoded !== null) assert.deepEqual(readReclaim(c.encoded), { value: c.record });
    });
  }

  it("reads what the Go operator writes, with lists in any order", () => {
    const raw = `{"generation":7,"vms":["${VMTB}","${VM0}"],"suspended":["${VM0}"]}`;
    assert.deepEqual(readReclaim(raw).value, record({ generation: 7, vms: [VMTB, VM0], suspended: [VM0] }));
  });

  it("reads missing, empty and null as empty without a warning", () => {
    for (const raw of [undefined, "", "null"]) assert.deepEqual(readReclaim(raw), { value: EMPTY_RECLAIM });
  });

  it("reads unreadable JSON as empty with a warning", () => {
    for (const raw of ["{", "[]", '{"vms":"vk"}', '{"generation":"2","vms":[]}', '{"vms":[1]}']) {
      const decoded = readReclaim(raw);
      assert.deepEqual(decoded.value, EMPTY_RECLAIM, raw);
      assert.notEqual(decoded.warning, undefined, raw);
    }
  });
});

describe("reclaimPatchValue", () => {
  it("skips a write that changes nothing", () => {
    const r = record({ generation: 1, vms: [VM0] });
    assert.equal(reclaimPatchValue(encodeReclaim(r) ?? "", r), undefined);
    assert.equal(reclaimPatchValue(undefined, EMPTY_RECLAIM), undefined);
  });

  it("sets a changed record and removes an emptied one", () => {
    assert.equal(reclaimPatchValue(undefined, record({ vms: [VM0] })), `{"generation":0,"vms":["${VM0}"]}`);
    assert.equal(reclaimPatchValue(`{"generation":0,"vms":["${VM0}"]}`, EMPTY_RECLAIM), null);
  });
});

describe("step 6: recordSuspend", () => {
  it("merges the VMs with those recorded and lists them as suspended", () => {
    const before = record({ generation: 2, vms: [VMTB], restore: [VMTB] });
    assert.deepEqual(
      recordSuspend(before, [VM0, VM1, VMTB]),
      record({ generation: 2, vms: [VMTB, VM0, VM1], restore: [VMTB], suspended: [VM0, VM1, VMTB] }),
    );
  });

  it("is idempotent across passes", () => {
    const once = recordSuspend(EMPTY_RECLAIM, [VM0, VM1]);
    assert.deepEqual(recordSuspend(once, [VM1, VM0]), once);
  });
});

describe("step 10: unsuspend bookkeeping", () => {
  it("runs only with a suspended list or an annotated pod", () => {
    assert.equal(needsUnsuspendBookkeeping(record({ vms: [VM0] }), 0), false);
    assert.equal(needsUnsuspendBookkeeping(record({ vms: [VM0], suspended: [VM0] }), 0), true);
    assert.equal(needsUnsuspendBookkeeping(EMPTY_RECLAIM, 1), true);
  });

  it("owes a restore to every suspended VM whose pod is missing, then clears the list last", () => {
    const suspended = record({ generation: 3, vms: [VMTB, VM0, VM1], suspended: [VM0, VM1] });
    const first = beginUnsuspend(suspended, 5, [], new Set([VM0]));
    assert.deepEqual(
      first,
      record({ generation: 5, vms: [VMTB, VM0, VM1], restore: [VM1], suspended: [VM0, VM1] }),
    );
    assert.deepEqual(
      finishUnsuspend(first),
      record({ generation: 5, vms: [VMTB, VM0, VM1], restore: [VM1] }),
    );
  });

  it("does not owe a restore to a VM an earlier cycle recorded", () => {
    const r = record({ generation: 3, vms: [VMTB, VM0], suspended: [VM0] });
    assert.deepEqual(beginUnsuspend(r, 4, [], new Set()).restore, [VM0]);
  });

  it("records annotated pods without a suspended list (older operator, abandoned quiesce)", () => {
    const first = beginUnsuspend(EMPTY_RECLAIM, 6, [VM0], new Set([VM0]));
    assert.deepEqual(first, record({ generation: 6, vms: [VM0] }));
    assert.deepEqual(finishUnsuspend(first), first);
  });

  it("a retried first write after a crash changes nothing", () => {
    const suspended = record({ generation: 3, vms: [VM0, VM1], suspended: [VM0, VM1] });
    const first = beginUnsuspend(suspended, 5, [VM0], new Set([VM0]));
    assert.deepEqual(beginUnsuspend(first, 5, [VM0], new Set([VM0])), first);
  });
});

describe("dropping and querying VMs", () => {
  const r = record({ generation: 2, vms: [VM0, VM1, VMTB], restore: [VM1], suspended: [VM1, VMTB] });

  it("drops a VM from every list", () => {
    assert.deepEqual(dropVM(r, VM1), record({ generation: 2, vms: [VM0, VMTB], suspended: [VMTB] }));
    assert.equal(encodeReclaim(dropVMs(r, [VM0, VM1, VMTB])), null);
  });

  it("answers owesRestore and isRecorded", () => {
    assert.equal(owesRestore(r, VM1), true);
    assert.equal(owesRestore(r, VM0), false);
    assert.equal(isRecorded(r, VMTB), true);
    assert.equal(isRecorded(r, "vk-ns-demo-9"), false);
  });
});

describe("wokenRecordedVMs", () => {
  function pod(vm: string, opts: { hibernate?: boolean; live?: boolean; state?: string; gen?: number }): Pod {
    const annotations: Record<string, string> = { [ANN_VM_NAME]: vm };
    if (opts.hibernate) annotations[ANN_HIBERNATE] = "true";
    if (opts.live !== false) annotations[ANN_VM_ID] = "vmid";
    if (opts.state) annotations[ANN_LIFECYCLE_STATE] = opts.state;
    if (opts.gen !== undefined) annotations[ANN_LIFECYCLE_OBSERVED_GENERATION] = String(opts.gen);
    return {
      metadata: { name: vm, annotations },
      spec: { containers: [{ name: "agent" }] },
      status: {
        phase: "Running",
        containerStatuses: [{ name: "agent", ready: true, restartCount: 0, state: { running: {} } }],
      },
    };
  }

  const r = record({ generation: 5, vms: [VM0, VM1, VMTB] });

  it("takes a recorded VM that runs ready at the record's generation or later", () => {
    const pods = [pod(VMTB, { state: "ready", gen: 6 }), pod(VM0, { state: "ready", gen: 5 })];
    assert.deepEqual(wokenRecordedVMs(r, pods), [VM0, VMTB]);
  });

  it("leaves a VM that is still annotated, not live, not ready, behind, or unrecorded", () => {
    const pods = [
      pod(VM0, { state: "ready", gen: 5, hibernate: true }),
      pod(VM1, { state: "ready", gen: 5, live: false }),
      pod(VMTB, { state: "hibernated", gen: 5 }),
      pod("vk-ns-demo-2", { state: "ready", gen: 5 }),
    ];
    assert.deepEqual(wokenRecordedVMs(r, pods), []);
    assert.deepEqual(wokenRecordedVMs(r, [pod(VM0, { state: "ready", gen: 4 })]), []);
  });
});

describe("branch transitions", () => {
  it("records the targets first, then owes them a restore; the suspended list stays untouched", () => {
    const start = { generation: 1, vms: ["vk-ns-demo-9"], restore: [], suspended: [] };
    const recorded = recordVMs(start, 2, ["vk-ns-demo-0", "vk-ns-demo-1"]);
    assert.deepEqual(recorded, {
      generation: 2,
      vms: ["vk-ns-demo-9", "vk-ns-demo-0", "vk-ns-demo-1"],
      restore: [],
      suspended: [],
    });
    assert.equal(owesRestore(recorded, "vk-ns-demo-0"), false);
    const owed = oweRestores(recorded, ["vk-ns-demo-0", "vk-ns-demo-1"]);
    assert.deepEqual(owed.restore, ["vk-ns-demo-0", "vk-ns-demo-1"]);
    assert.equal(owesRestore(owed, "vk-ns-demo-1"), true);
    assert.equal(
      encodeReclaim(owed),
      '{"generation":2,"vms":["vk-ns-demo-9","vk-ns-demo-0","vk-ns-demo-1"],"restore":["vk-ns-demo-0","vk-ns-demo-1"]}',
    );
  });
});
