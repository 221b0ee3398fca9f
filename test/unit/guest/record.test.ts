// The pod's guest-hooks record: what is written reads back the same, anything unreadable reads as no
// record (the hooks run again), and the encoding is one string per record whatever the key order.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { PodMeta } from "../../../src/contract/pod.ts";
import { ANN_GUEST_HOOKS } from "../../../src/guest/keys.ts";
import {
  encodeGuestHooksRecord,
  type GuestHooksRecord,
  readGuestHooksRecord,
} from "../../../src/guest/record.ts";
import { phase } from "./fixture.ts";

const onPod = (value: string | undefined): PodMeta => ({
  metadata: { annotations: value === undefined ? {} : { [ANN_GUEST_HOOKS]: value } },
});

const FULL: GuestHooksRecord = {
  vmID: "vm-1",
  origin: "clone",
  post: phase("Succeeded"),
  claim: { name: "c1", ...phase("Failed", { hook: "login", message: "exited with status 3" }) },
  preHibernate: phase("Failed", { policyGeneration: 2, hook: "flush", message: "timed out after 30s" }),
};

describe("guest hooks record", () => {
  it("reads back what was written, every phase and field", () => {
    assert.deepEqual(readGuestHooksRecord(onPod(encodeGuestHooksRecord(FULL))), FULL);
    const bare: GuestHooksRecord = { vmID: "vm-2" };
    assert.deepEqual(readGuestHooksRecord(onPod(encodeGuestHooksRecord(bare))), bare);
    const woke: GuestHooksRecord = { vmID: "vm-3", origin: "wake", post: phase("Succeeded") };
    assert.deepEqual(readGuestHooksRecord(onPod(encodeGuestHooksRecord(woke))), woke);
  });

  it("reads an absent, empty, garbage or misshapen annotation as no record", () => {
    for (const raw of [
      undefined,
      "",
      "{not json",
      "null",
      "42",
      '"vm-1"',
      "[]",
      '{"origin":"clone"}',
      '{"vmID":7}',
    ]) {
      assert.deepEqual(readGuestHooksRecord(onPod(raw)), { vmID: "" }, `annotation ${raw}`);
    }
  });

  it("drops a phase it cannot read and keeps the rest", () => {
    const raw = JSON.stringify({
      vmID: "vm-1",
      origin: "sideways",
      post: { result: "Maybe", at: "2026-01-01T00:00:00Z", policyGeneration: 1 },
      claim: { result: "Succeeded", at: "2026-01-01T00:00:00Z", policyGeneration: 1 },
      preHibernate: { result: "Succeeded", at: "2026-01-01T00:00:00Z", policyGeneration: "1" },
    });
    assert.deepEqual(readGuestHooksRecord(onPod(raw)), { vmID: "vm-1" }, "a claim phase needs its name");
  });

  it("encodes one string per record, whatever order its keys were built in", () => {
    const shuffled = {
      preHibernate: {
        message: "timed out after 30s",
        hook: "flush",
        policyGeneration: 2,
        at: FULL.preHibernate?.at,
        result: "Failed",
      },
      claim: {
        message: "exited with status 3",
        hook: "login",
        policyGeneration: 1,
        at: FULL.claim?.at,
        result: "Failed",
        name: "c1",
      },
      post: { policyGeneration: 1, at: FULL.post?.at, result: "Succeeded" },
      origin: "clone",
      vmID: "vm-1",
    } as GuestHooksRecord;
    const encoded = encodeGuestHooksRecord(shuffled);
    assert.equal(encoded, encodeGuestHooksRecord(FULL));
    assert.deepEqual(Object.keys(JSON.parse(encoded)), ["vmID", "origin", "post", "claim", "preHibernate"]);
    assert.deepEqual(Object.keys(JSON.parse(encoded).claim), [
      "name",
      "result",
      "at",
      "policyGeneration",
      "hook",
      "message",
    ]);
    // Decoding and encoding again changes nothing: an unchanged record is never rewritten.
    assert.equal(encodeGuestHooksRecord(readGuestHooksRecord(onPod(encoded))), encoded);
  });
});
