// parseGoDuration and formatGoDuration against Go itself: every row below is what go1.26's
// time.ParseDuration returned (nanoseconds, or its error) and what Duration.String printed.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatGoDuration, parseGoDuration } from "../../../src/idle/duration.ts";

/** [input, nanoseconds or null for an error, Duration.String() or the error text]. */
const GO_ROWS: [string, string | null, string][] = [
  ["0", "0", "0s"],
  ["-0", "0", "0s"],
  ["+0", "0", "0s"],
  ["", null, 'time: invalid duration ""'],
  ["30m", "1800000000000", "30m0s"],
  ["1h30m", "5400000000000", "1h30m0s"],
  ["1.5h", "5400000000000", "1h30m0s"],
  ["300ms", "300000000", "300ms"],
  ["1µs", "1000", "1µs"],
  ["1μs", "1000", "1µs"],
  ["1us", "1000", "1µs"],
  ["1ns", "1", "1ns"],
  ["5s", "5000000000", "5s"],
  ["-5s", "-5000000000", "-5s"],
  ["+5s", "5000000000", "5s"],
  ["1.s", "1000000000", "1s"],
  [".5s", "500000000", "500ms"],
  ["-.5s", "-500000000", "-500ms"],
  [".s", null, 'time: invalid duration ".s"'],
  ["1", null, 'time: missing unit in duration "1"'],
  ["1x", null, 'time: unknown unit "x" in duration "1x"'],
  ["1.5", null, 'time: missing unit in duration "1.5"'],
  ["30 m", null, 'time: unknown unit " m" in duration "30 m"'],
  [" 30m", null, 'time: invalid duration " 30m"'],
  ["1h1h", "7200000000000", "2h0m0s"],
  ["1.0000000000000000000001h", "3600000000000", "1h0m0s"],
  ["0.1ns", "0", "0s"],
  ["9223372036854775807ns", "9223372036854775807", "2562047h47m16.854775807s"],
  ["9223372036854775808ns", null, 'time: invalid duration "9223372036854775808ns"'],
  ["-9223372036854775808ns", "-9223372036854775808", "-2562047h47m16.854775808s"],
  ["2562047h47m16.854775807s", "9223372036854775807", "2562047h47m16.854775807s"],
  ["2562048h", null, 'time: invalid duration "2562048h"'],
  ["1.123456789s", "1123456789", "1.123456789s"],
  ["100h", "360000000000000", "100h0m0s"],
  ["1d", null, 'time: unknown unit "d" in duration "1d"'],
  ["3m2s1ms", "182001000000", "3m2.001s"],
  ["1e3s", null, 'time: unknown unit "e" in duration "1e3s"'],
  ["0s", "0", "0s"],
  ["0.000000001s", "1", "1ns"],
  ["10.5m", "630000000000", "10m30s"],
  ["1h-5m", null, 'time: unknown unit "h-" in duration "1h-5m"'],
  ["15e", null, 'time: unknown unit "e" in duration "15e"'],
  ["s", null, 'time: invalid duration "s"'],
  ["..5s", null, 'time: invalid duration "..5s"'],
  ["1..5s", null, 'time: missing unit in duration "1..5s"'],
  ["2h45m30.5s", "9930500000000", "2h45m30.5s"],
  ["0.9999999999ns", "0", "0s"],
];

describe("parseGoDuration", () => {
  for (const [input, ns, text] of GO_ROWS) {
    it(`${JSON.stringify(input)} parses as Go parses it`, () => {
      const parsed = parseGoDuration(input);
      if (ns === null) {
        assert.deepEqual(parsed, { ok: false, error: text });
      } else {
        assert.deepEqual(parsed, { ok: true, ns: BigInt(ns) });
      }
    });
  }
});

describe("formatGoDuration", () => {
  for (const [, ns, text] of GO_ROWS) {
    if (ns === null) continue;
    it(`${ns}ns prints as Go prints it (${text})`, () => {
      assert.equal(formatGoDuration(BigInt(ns)), text);
    });
  }

  it("prints sub-millisecond and fractional values with Go's units", () => {
    assert.equal(formatGoDuration(1_500n), "1.5\u00b5s");
    assert.equal(formatGoDuration(1_500_000n), "1.5ms");
    assert.equal(formatGoDuration(999n), "999ns");
  });
});
