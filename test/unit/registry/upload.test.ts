import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  backoffMs,
  chunkBytes,
  chunkPlan,
  isRetryableStatus,
  nextChunk,
  parseContentRange,
  parseUploadRange,
  resumeOffset,
} from "../../../src/registry/upload.ts";

describe("chunk plan", () => {
  it("cuts a blob into chunks of the size, the last one short, both ends inclusive", () => {
    assert.deepEqual(chunkPlan(0, 10, 4), [
      { start: 0, end: 3 },
      { start: 4, end: 7 },
      { start: 8, end: 9 },
    ]);
    assert.deepEqual(chunkPlan(0, 8, 4), [
      { start: 0, end: 3 },
      { start: 4, end: 7 },
    ]);
  });

  it("starts a resumed plan at the offset, whatever the chunk boundaries were", () => {
    assert.deepEqual(chunkPlan(5, 10, 4), [
      { start: 5, end: 8 },
      { start: 9, end: 9 },
    ]);
    assert.equal(nextChunk(10, 10, 4), undefined);
    assert.deepEqual(chunkPlan(0, 0, 4), []);
  });

  it("raises the configured chunk to the registry's OCI-Chunk-Min-Length, never lowers it", () => {
    assert.equal(chunkBytes(1024, "4096"), 4096);
    assert.equal(chunkBytes(8192, "4096"), 8192);
    assert.equal(chunkBytes(1024, null), 1024);
    assert.equal(chunkBytes(1024, "lots"), 1024);
    assert.equal(chunkBytes(1024, "-5"), 1024);
  });
});

describe("upload session ranges", () => {
  it("reads the last byte a session holds from Range: 0-<last>", () => {
    assert.equal(parseUploadRange("0-1048575"), 1048575);
    assert.equal(parseUploadRange("bytes=0-99"), 99);
    assert.equal(parseUploadRange(null), undefined);
    assert.equal(parseUploadRange("5-99"), undefined);
    assert.equal(parseUploadRange("0-"), undefined);
  });

  it("resumes at the byte after the last one held", () => {
    assert.equal(resumeOffset("0-1048575"), 1048576);
    assert.equal(resumeOffset("0-9", 9), 10);
    assert.equal(resumeOffset(null), undefined);
  });

  it("takes 0-0 as one byte only right after sending byte 0 alone; otherwise it is unknown", () => {
    // distribution answers 0-0 for an empty session as well as for one holding byte 0.
    assert.equal(resumeOffset("0-0", 0), 1);
    assert.equal(resumeOffset("0-0"), undefined);
    assert.equal(resumeOffset("0-0", 1023), undefined);
  });

  it("reads where a ranged GET's answer starts and the blob's size", () => {
    assert.deepEqual(parseContentRange("bytes 100-199/1000"), { first: 100, size: 1000 });
    assert.equal(parseContentRange("bytes */1000"), undefined);
    assert.equal(parseContentRange(null), undefined);
  });
});

describe("retries", () => {
  it("retries no answer, 408, 429 and 5xx; not other refusals", () => {
    for (const status of [0, 408, 429, 500, 502, 503])
      assert.equal(isRetryableStatus(status), true, `${status}`);
    for (const status of [400, 401, 403, 404, 413])
      assert.equal(isRetryableStatus(status), false, `${status}`);
  });

  it("waits 0.5 s before the second try, doubling to at most 10 s", () => {
    assert.deepEqual(
      [2, 3, 4, 5, 6, 7, 8].map((attempt) => backoffMs(attempt)),
      [500, 1000, 2000, 4000, 8000, 10_000, 10_000],
    );
  });
});
