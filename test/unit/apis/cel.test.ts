import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ATOI_NUMBER_PATTERN, digitsAtMostPattern, RELATIVE_REF_PATTERN } from "../../../src/apis/v1/cel.ts";

// JavaScript regexes agree with RE2 (CEL's engine) on the constructs used: classes, (?:), {m,n}.
const atoiNumber = new RegExp(ATOI_NUMBER_PATTERN);
const relativeRef = new RegExp(RELATIVE_REF_PATTERN);

describe("digitsAtMostPattern", () => {
  it("matches exactly the same-length digit strings <= max", () => {
    const max = "3050";
    const pattern = new RegExp(`^(?:${digitsAtMostPattern(max)})$`);
    for (let n = 0; n <= 9999; n++) {
      const digits = String(n).padStart(4, "0");
      assert.equal(pattern.test(digits), n <= 3050, digits);
    }
  });
});

describe("ATOI_NUMBER_PATTERN (strconv.Atoi succeeds on 64-bit)", () => {
  const int64Max = 9223372036854775807n;
  const cases = [
    "0",
    "7",
    "0042",
    "123456789012345678",
    "9223372036854775807",
    "9223372036854775808",
    "9999999999999999999",
    "00009223372036854775807",
    "10000000000000000000",
    "123456789012345678901234567890",
  ];
  for (const name of cases) {
    it(name, () => {
      assert.equal(atoiNumber.test(name), BigInt(name) <= int64Max);
    });
  }
  it("rejects names with any non-digit", () => {
    for (const name of ["a1", "1a", "1-2", "tools", ""]) assert.equal(atoiNumber.test(name), false, name);
  });
});

describe("RELATIVE_REF_PATTERN (ociutil.IsRelativeRef)", () => {
  const valid = [
    "ubuntu",
    "ubuntu:24.04",
    "cocoon/ubuntu:latest",
    "a.b_c__d--e/f",
    "repo:_Tag-1.x",
    `r:${"t".repeat(128)}`,
  ];
  const invalid = [
    "localhost:5000/ubuntu",
    "ghcr.io:443/x:1",
    "ubuntu@sha256:abc",
    "Ubuntu",
    "repo:",
    ":tag",
    "repo:tag:more",
    "https://example.com/x.img",
    "/repo",
    "repo/",
    "a..b",
    `r:${"t".repeat(129)}`,
    "repo:.tag",
  ];
  for (const ref of valid) it(`accepts ${ref.slice(0, 40)}`, () => assert.ok(relativeRef.test(ref)));
  for (const ref of invalid) it(`rejects ${ref.slice(0, 40)}`, () => assert.ok(!relativeRef.test(ref)));
});
