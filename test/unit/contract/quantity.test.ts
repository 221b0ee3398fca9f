import assert from "node:assert/strict";
import { test } from "node:test";
import {
  canonicalQuantity,
  compareQuantities,
  parseQuantity,
  QuantityError,
  quantityMillis,
} from "../../../src/contract/quantity.ts";

// Every pair was printed by k8s.io/apimachinery v0.35.4: resource.ParseQuantity(in).String().
const CANONICAL: [string, string][] = [
  ["1024Mi", "1Gi"],
  ["100G", "100G"],
  ["1536Mi", "1536Mi"],
  ["0.5Gi", "512Mi"],
  ["1000m", "1"],
  ["2000000k", "2G"],
  ["1e3", "1e3"],
  ["0.1", "100m"],
  ["1.5", "1500m"],
  ["0", "0"],
  ["100Gi", "100Gi"],
  ["1Gi", "1Gi"],
  ["8Gi", "8Gi"],
  ["1024Ki", "1Mi"],
  ["1048576Ki", "1Gi"],
  ["1536Ki", "1536Ki"],
  ["1.5Ki", "1536"],
  ["0.3Ki", "307200m"],
  ["512", "512"],
  ["1023", "1023"],
  ["1024", "1024"],
  ["2048", "2048"],
  ["1Ki", "1Ki"],
  ["100m", "100m"],
  ["1m", "1m"],
  ["0.001", "1m"],
  ["0.0001", "100u"],
  ["0.0000000001", "1n"],
  ["1n", "1n"],
  ["1u", "1u"],
  ["1500u", "1500u"],
  ["1000n", "1u"],
  ["1k", "1k"],
  ["1000k", "1M"],
  ["1M", "1M"],
  ["1000M", "1G"],
  ["1T", "1T"],
  ["1P", "1P"],
  ["1E", "1E"],
  ["1000E", "1"],
  ["1e-3", "1e-3"],
  ["1E3", "1E3"],
  ["1.5e3", "1500"],
  ["1e0", "1e0"],
  ["1e1", "10"],
  ["1e2", "100"],
  ["1e-9", "1e-9"],
  ["1e-10", "1e-9"],
  ["1e9", "1e9"],
  ["10e9", "10e9"],
  ["12e6", "12e6"],
  ["1.500", "1.500"],
  ["10.000", "10"],
  ["1.", "1."],
  [".5", "500m"],
  ["+100G", "+100G"],
  ["-100G", "-100G"],
  ["-1Gi", "-1Gi"],
  ["-1.5Gi", "-1536Mi"],
  ["-0", "0"],
  ["01Gi", "01Gi"],
  ["0100G", "0100G"],
  ["+1Gi", "+1Gi"],
  ["0.0", "0"],
  ["00", "0"],
  ["0Gi", "0"],
  ["0e3", "0"],
  ["12345678901234567890", "12345678901234567890"],
  ["123456789012345678", "123456789012345678"],
  ["1234567890123456789", "1234567890123456789"],
  ["9999999999Ei", "9223372036854775807"],
  ["8Ei", "9223372036854775807"],
  ["7Ei", "7Ei"],
  ["0.5", "500m"],
  ["0.25", "250m"],
  ["1.25Gi", "1280Mi"],
  ["100.5Mi", "102912Ki"],
  ["3Gi", "3Gi"],
  ["3072Mi", "3Gi"],
  ["2.5G", "2500M"],
  ["2500M", "2500M"],
  ["2.5Gi", "2560Mi"],
  ["1Ti", "1Ti"],
  ["1024Gi", "1Ti"],
  ["1Pi", "1Pi"],
  ["1Ei", "1Ei"],
  ["1e+3", "1e+3"],
  ["1e21", "1e21"],
  ["5e-7", "500e-9"],
  ["1.0", "1"],
  ["1.10", "1100m"],
  ["110", "110"],
  ["1100", "1100"],
  ["11000", "11k"],
  ["-1", "-1"],
  ["-1000m", "-1"],
  ["-0.5", "-500m"],
  ["+", "0"],
  ["-", "0"],
  [".", "0"],
  ["Gi", "0"],
  ["e3", "0"],
  ["1e1000000", "10e999999"],
  ["1e-1000000", "1e-9"],
  [" 1Gi ", "1Gi"],
];

// Inputs Go's ParseQuantity rejects.
const INVALID: string[] = [
  "abc",
  "1.2.3",
  "1 Gi",
  "1Gix",
  "1e",
  "1K",
  "1mi",
  "1ki",
  "1Ee3",
  "",
  "1gi",
  "1Mb",
  "--1",
  "0x10",
];

test("canonicalQuantity matches Go's Quantity.String() for every verified vector", () => {
  for (const [input, expected] of CANONICAL) {
    assert.equal(canonicalQuantity(input), expected, `input ${JSON.stringify(input)}`);
  }
});

test("canonicalQuantity throws QuantityError on inputs Go rejects", () => {
  for (const input of INVALID) {
    assert.throws(() => canonicalQuantity(input), QuantityError, `input ${JSON.stringify(input)}`);
  }
});

test("QuantityError names the offending input", () => {
  assert.throws(() => canonicalQuantity("1mi"), /invalid quantity "1mi": unable to parse quantity's suffix/);
  assert.throws(() => canonicalQuantity("1 Gi"), /invalid quantity "1 Gi": quantities must match/);
});

test("JSON numbers are read as Go reads their JSON text", () => {
  assert.equal(canonicalQuantity(100), "100");
  assert.equal(canonicalQuantity(1.5), "1500m");
  assert.equal(canonicalQuantity(0), "0");
  assert.equal(canonicalQuantity(1e21), "1e+21");
});

test("parseQuantity keeps the format and exact value", () => {
  assert.deepEqual(parseQuantity("1024Mi"), { unscaled: 1073741824n, exponent: 0, format: "BinarySI" });
  assert.deepEqual(parseQuantity("100m"), {
    unscaled: 100n,
    exponent: -3,
    format: "DecimalSI",
    verbatim: "100m",
  });
  assert.equal(parseQuantity("1e3").format, "DecimalExponent");
  assert.equal(parseQuantity("0.3Ki").format, "BinarySI");
});

test("compareQuantities compares exact values across formats", () => {
  assert.equal(compareQuantities("1Gi", "1024Mi"), 0);
  assert.equal(compareQuantities("1", "1000m"), 0);
  assert.equal(compareQuantities("1G", "1Gi"), -1);
  assert.equal(compareQuantities("2", "1500m"), 1);
  assert.equal(compareQuantities(2, "2000m"), 0);
});

test("quantityMillis rounds up to whole thousandths", () => {
  assert.equal(quantityMillis("1"), 1000n);
  assert.equal(quantityMillis("1500u"), 2n);
  assert.equal(quantityMillis("1Ki"), 1024000n);
  assert.equal(quantityMillis("-1500u"), -2n);
});
