import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { UsageError } from "../../../src/plugin/errors.ts";
import {
  formatDuration,
  formatTable,
  humanDuration,
  humanSize,
  parseDuration,
  parseOutputFormat,
} from "../../../src/plugin/output.ts";

describe("humanDuration (apimachinery's HumanDuration)", () => {
  it("prints kubectl's AGE forms", () => {
    const cases: [number, string][] = [
      [-5_000, "<invalid>"],
      [-500, "0s"],
      [45_000, "45s"],
      [119_000, "119s"],
      [200_000, "3m20s"],
      [180_000, "3m"],
      [17 * 60_000, "17m"],
      [5.5 * 3_600_000, "5h30m"],
      [30 * 3_600_000, "30h"],
      [76 * 3_600_000, "3d4h"],
      [120 * 86_400_000, "120d"],
      [(2 * 365 + 30) * 86_400_000, "2y30d"],
    ];
    for (const [ms, text] of cases) assert.equal(humanDuration(ms), text, `${ms} ms`);
  });
});

describe("durations and sizes", () => {
  it("parses Go durations and refuses anything else", () => {
    assert.equal(parseDuration("90s"), 90_000);
    assert.equal(parseDuration("1h30m"), 5_400_000);
    assert.equal(parseDuration("250ms"), 250);
    assert.equal(parseDuration("0"), 0);
    for (const bad of ["", "5", "abc", "5m junk", "-1s"])
      assert.throws(() => parseDuration(bad), UsageError, bad);
  });

  it("prints durations as Go does and sizes in binary units", () => {
    assert.equal(formatDuration(300_000), "5m0s");
    assert.equal(formatDuration(45_000), "45s");
    assert.equal(formatDuration(5_400_000), "1h30m0s");
    assert.equal(humanSize(512), "512B");
    assert.equal(humanSize(1536), "1.5KiB");
    assert.equal(humanSize(12 * 1024 * 1024), "12.0MiB");
  });
});

describe("tables and formats", () => {
  it("pads columns to the widest cell under upper-case headers", () => {
    assert.equal(
      formatTable(
        ["slot", "pod"],
        [
          ["0", "demo-0"],
          ["tb", "demo-tb"],
        ],
      ),
      ["SLOT   POD", "0      demo-0", "tb     demo-tb"].join("\n"),
    );
  });

  it("knows wide, json and yaml and refuses others", () => {
    assert.equal(parseOutputFormat(undefined), "table");
    assert.equal(parseOutputFormat("yaml"), "yaml");
    assert.throws(() => parseOutputFormat("xml"), /unknown output format "xml"/);
  });
});
