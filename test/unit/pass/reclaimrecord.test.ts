// The reclaim record's `releasedUnder`: what each VM a release suspend deleted the pod of was
// snapshotted under. Beyond the Go operator's shape, so its records (which lack it) must read as they
// always did, and ours must still read as the Go operator's fields.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  dropVMs,
  EMPTY_RECLAIM,
  encodeReclaim,
  forgetReleased,
  readReclaim,
  reclaimPatchValue,
  recordReleased,
} from "../../../src/pass/reclaimrecord.ts";

const VM0 = "vk-ns-demo-0";
const VM1 = "vk-ns-demo-1";
const CH = { backend: "cloud-hypervisor", os: "linux", snapshotCompatibilityClass: "" };
const FC = { backend: "firecracker", os: "windows", snapshotCompatibilityClass: "n2-v1" };

/** A record as the Go operator writes it (encoding/json of its struct: these keys, this order). */
const GO_RECORD = `{"generation":3,"vms":["${VM0}","${VM1}"],"suspended":["${VM0}","${VM1}"]}`;

describe("the reclaim record's releasedUnder", () => {
  it("round-trips byte for byte, so a pass that changes nothing writes nothing", () => {
    const record = recordReleased(readReclaim(GO_RECORD).value, { [VM0]: CH, [VM1]: FC });
    const encoded = encodeReclaim(record);
    assert.equal(
      encoded,
      `{"generation":3,"vms":["${VM0}","${VM1}"],"suspended":["${VM0}","${VM1}"],"releasedUnder":{"${VM0}":{"backend":"cloud-hypervisor","os":"linux","snapshotCompatibilityClass":""},"${VM1}":{"backend":"firecracker","os":"windows","snapshotCompatibilityClass":"n2-v1"}}}`,
    );
    const read = readReclaim(encoded ?? undefined);
    assert.deepEqual(read, { value: record });
    assert.equal(reclaimPatchValue(encoded ?? undefined, read.value), undefined);
  });

  it("a Go operator's record reads without it and is written back unchanged", () => {
    const read = readReclaim(GO_RECORD);
    assert.equal(read.warning, undefined);
    assert.equal(read.value.releasedUnder, undefined);
    assert.equal(encodeReclaim(read.value), GO_RECORD);
  });

  it("ours keeps the Go operator's fields as it reads them, the extra key beside them", () => {
    const encoded = encodeReclaim(recordReleased(readReclaim(GO_RECORD).value, { [VM0]: CH })) ?? "";
    const { releasedUnder, ...goFields } = JSON.parse(encoded);
    assert.deepEqual(goFields, JSON.parse(GO_RECORD));
    assert.deepEqual(releasedUnder, { [VM0]: CH });
  });

  it("a malformed releasedUnder reads as absent with a warning; the tags and restores owed are kept", () => {
    for (const bad of [
      `[1]`,
      `"x"`,
      `{"${VM0}":"cloud-hypervisor"}`,
      `{"${VM0}":{"backend":"cloud-hypervisor","os":"linux"}}`,
      `{"${VM0}":{"backend":1,"os":"linux","snapshotCompatibilityClass":""}}`,
    ]) {
      const raw = `{"generation":3,"vms":["${VM0}"],"restore":["${VM0}"],"releasedUnder":${bad}}`;
      const read = readReclaim(raw);
      assert.deepEqual(
        read.value,
        { generation: 3, vms: [VM0], restore: [VM0], suspended: [] },
        `kept the rest of ${raw}`,
      );
      assert.equal(read.warning, "hibernate-reclaim releasedUnder is malformed, read as absent", raw);
    }
  });

  it("a malformed record as a whole still reads as empty, with the record's own warning", () => {
    const read = readReclaim(`{"vms":"x","releasedUnder":{}}`);
    assert.deepEqual(read.value, EMPTY_RECLAIM);
    assert.equal(read.warning, "hibernate-reclaim is malformed, read as empty");
  });

  it("records only VMs the record holds, and replaces what an earlier release recorded", () => {
    const base = readReclaim(`{"generation":1,"vms":["${VM0}"]}`).value;
    const first = recordReleased(base, { [VM0]: CH, [VM1]: CH });
    assert.deepEqual(first.releasedUnder, { [VM0]: CH });
    assert.deepEqual(recordReleased(first, { [VM0]: FC }).releasedUnder, { [VM0]: FC });
    assert.equal(recordReleased(base, {}), base);
  });

  it("goes with its VM: a dropped VM, or a released snapshot its wake dropped", () => {
    const record = recordReleased(readReclaim(GO_RECORD).value, { [VM0]: CH, [VM1]: FC });
    assert.deepEqual(dropVMs(record, [VM0]).releasedUnder, { [VM1]: FC });
    assert.equal(dropVMs(record, [VM0, VM1]).releasedUnder, undefined);
    const woken = forgetReleased(record, VM1);
    assert.deepEqual(woken.releasedUnder, { [VM0]: CH });
    assert.deepEqual(woken.vms, [VM0, VM1], "the tag's drop is still owed (step 10)");
    assert.equal(forgetReleased(forgetReleased(woken, VM0), VM0).releasedUnder, undefined);
    assert.equal(encodeReclaim(forgetReleased(woken, VM0)), GO_RECORD);
  });
});

describe("reading the reclaim record as the Go operator's encoding/json does", () => {
  const MALFORMED = "hibernate-reclaim is malformed, read as empty";

  it("a missing generation or a null list reads as zero or empty: the record is kept", () => {
    for (const raw of [
      `{"vms":["${VM0}"],"restore":["${VM0}"]}`,
      `{"generation":null,"vms":["${VM0}"],"restore":["${VM0}"],"suspended":null}`,
    ]) {
      assert.deepEqual(
        readReclaim(raw),
        { value: { generation: 0, vms: [VM0], restore: [VM0], suspended: [] } },
        raw,
      );
    }
  });

  it("a record that is not a JSON object, or holds a list with a non-string, reads as empty with a warning", () => {
    for (const raw of [
      "7",
      "true",
      `"x"`,
      "[]",
      `["${VM0}"]`,
      `{"vms":["${VM0}",1]}`,
      `{"generation":1.5}`,
    ]) {
      assert.deepEqual(readReclaim(raw), { value: EMPTY_RECLAIM, warning: MALFORMED }, raw);
    }
  });

  it("a null releasedUnder reads as absent, with no warning", () => {
    assert.deepEqual(readReclaim(`{"generation":3,"vms":["${VM0}"],"releasedUnder":null}`), {
      value: { generation: 3, vms: [VM0], restore: [], suspended: [] },
    });
  });

  it("a releasedUnder that is no map of complete entries reads as absent with a warning", () => {
    for (const bad of [
      "[]",
      "7",
      `{"${VM0}":null}`,
      `{"${VM0}":[]}`,
      `{"${VM0}":{"backend":"cloud-hypervisor","snapshotCompatibilityClass":""}}`,
    ]) {
      const read = readReclaim(`{"generation":3,"vms":["${VM0}"],"releasedUnder":${bad}}`);
      assert.deepEqual(
        read,
        {
          value: { generation: 3, vms: [VM0], restore: [], suspended: [] },
          warning: "hibernate-reclaim releasedUnder is malformed, read as absent",
        },
        bad,
      );
    }
  });
});
