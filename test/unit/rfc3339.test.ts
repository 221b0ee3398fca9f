// RFC 3339 as Go's time package reads and writes it (src/contract/rfc3339.ts): every annotation and
// status time the operator stamps or reads goes through these three functions.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatRFC3339, formatRFC3339Nano, parseRFC3339 } from "../../src/rfc3339.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");

describe("parseRFC3339", () => {
  it("reads UTC, offsets and fractions", () => {
    assert.equal(parseRFC3339("2026-01-01T00:00:00Z"), T0);
    assert.equal(parseRFC3339("2026-01-01T02:00:00+02:00"), T0);
    assert.equal(parseRFC3339("2025-12-31T19:30:00-04:30"), T0);
    assert.equal(parseRFC3339("2026-01-01T00:00:00.250Z"), T0 + 250);
    assert.equal(parseRFC3339("2026-01-01T00:00:00.5Z"), T0 + 500);
    assert.equal(parseRFC3339("2026-01-01T00:00:00.145Z"), T0 + 145);
    assert.equal(parseRFC3339("2026-01-01T00:00:00.123456789Z"), T0 + 123);
    assert.equal(parseRFC3339("2024-02-29T00:00:00Z"), Date.parse("2024-02-29T00:00:00Z"));
  });

  it("refuses what Go's time.Parse(time.RFC3339, …) refuses", () => {
    for (const text of [
      "",
      "yesterday",
      "2026-01-01",
      "2026-01-01 00:00:00Z",
      "2026-01-01T00:00:00",
      "2026-13-01T00:00:00Z",
      "2026-02-31T00:00:00Z",
      "2025-02-29T00:00:00Z",
      "2026-01-01T24:00:00Z",
      "2026-01-01T00:60:00Z",
      "2026-01-01T00:00:60Z",
      "2026-01-01T00:00:00+24:00",
      "1767225600",
      "Thu, 01 Jan 2026 00:00:00 GMT",
    ]) {
      assert.equal(parseRFC3339(text), undefined, text);
    }
    assert.equal(parseRFC3339(undefined), undefined);
  });
});

describe("formatRFC3339", () => {
  it("writes UTC whole seconds, as Go's time.RFC3339 does", () => {
    assert.equal(formatRFC3339(T0), "2026-01-01T00:00:00Z");
    assert.equal(formatRFC3339(T0 + 999), "2026-01-01T00:00:00Z");
  });
});

describe("formatRFC3339Nano", () => {
  it("keeps the milliseconds with trailing zeros dropped, as encoding/json writes a time.Time", () => {
    assert.equal(formatRFC3339Nano(T0), "2026-01-01T00:00:00Z");
    assert.equal(formatRFC3339Nano(T0 + 120), "2026-01-01T00:00:00.12Z");
    assert.equal(formatRFC3339Nano(T0 + 300), "2026-01-01T00:00:00.3Z");
    assert.equal(parseRFC3339(formatRFC3339Nano(T0 + 7)), T0 + 7);
  });
});
