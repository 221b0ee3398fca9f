// The streaming list decoder behind KubeClient.list: items come out one by one, whatever the chunk
// boundaries, with strings that contain the structural characters the scan looks for.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ListDecoder, type ListMetadata } from "../../../src/controller/listdecoder.ts";

const tricky = [
  { metadata: { name: "a", annotations: { "x/y": 'has "quotes", {braces} and [brackets]: ok' } } },
  { metadata: { name: "b", annotations: { path: "C:\\dir\\", escaped: '\\"', unicode: "é日本\u2028🙂" } } },
  { metadata: { name: "c" }, spec: { nested: [[{ deep: [1, 2, { x: null }] }], true, false, -1.5e3] } },
];

function list(items: unknown, metadata: ListMetadata = { resourceVersion: "42" }): Record<string, unknown> {
  return { kind: "PodList", apiVersion: "v1", metadata, items };
}

function decode(chunks: Buffer[]): { items: unknown[]; metadata: ListMetadata } {
  const items: unknown[] = [];
  const decoder = new ListDecoder((item) => items.push(item));
  for (const chunk of chunks) decoder.write(chunk);
  return { items, metadata: decoder.end() };
}

function splitAt(bytes: Buffer, cuts: number[]): Buffer[] {
  const out: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(bytes.subarray(from, cut));
    from = cut;
  }
  return out;
}

describe("ListDecoder", () => {
  it("yields every item and the list metadata, compact or pretty-printed", () => {
    for (const text of [JSON.stringify(list(tricky)), JSON.stringify(list(tricky), null, 2)]) {
      const { items, metadata } = decode([Buffer.from(text)]);
      assert.deepEqual(items, tricky);
      assert.deepEqual(metadata, { resourceVersion: "42" });
    }
  });

  it("gives the same result for a split at every byte, and for one byte at a time", () => {
    const bytes = Buffer.from(JSON.stringify(list(tricky, { resourceVersion: "7", continue: "tok" })));
    for (let cut = 1; cut < bytes.length; cut++) {
      assert.deepEqual(decode(splitAt(bytes, [cut])), {
        items: tricky,
        metadata: { resourceVersion: "7", continue: "tok" },
      });
    }
    const single = Array.from({ length: bytes.length }, (_, i) => i + 1).slice(0, -1);
    assert.deepEqual(decode(splitAt(bytes, single)).items, tricky);
  });

  it("finds metadata after the items, and takes null or empty items as an empty list", () => {
    const itemsFirst = `{"items":[{"a":1}],"kind":"PodList","metadata":{"resourceVersion":"9"}}`;
    assert.deepEqual(decode([Buffer.from(itemsFirst)]), {
      items: [{ a: 1 }],
      metadata: { resourceVersion: "9" },
    });
    assert.deepEqual(decode([Buffer.from(JSON.stringify(list(null)))]).items, []);
    assert.deepEqual(decode([Buffer.from(JSON.stringify(list([])))]).items, []);
  });

  it("refuses a body cut short and a body that is no list", () => {
    const text = JSON.stringify(list(tricky));
    assert.throws(() => decode([Buffer.from(text.slice(0, -20))]), /ended mid-document/);
    assert.throws(() => decode([Buffer.from('{"kind":"Status"}')]), /not a list/);
  });
});
