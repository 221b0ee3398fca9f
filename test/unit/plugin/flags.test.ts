import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { UsageError } from "../../../src/plugin/errors.ts";
import { type FlagSpec, parseArgs, positionalWords } from "../../../src/plugin/flags.ts";

const SPECS: FlagSpec[] = [
  { name: "namespace", short: "n", kind: "string", help: "" },
  { name: "release", kind: "boolean", help: "" },
  { name: "wait", kind: "optional", help: "" },
];

describe("parseArgs", () => {
  it("reads kubectl's flag forms before and after the positionals", () => {
    const args = parseArgs(["-n", "team", "demo", "--release", "--wait=90s"], SPECS);
    assert.deepEqual(args.positionals, ["demo"]);
    assert.deepEqual(
      [...args.flags],
      [
        ["namespace", "team"],
        ["release", true],
        ["wait", "90s"],
      ],
    );
    assert.equal(parseArgs(["-nteam"], SPECS).flags.get("namespace"), "team");
    assert.equal(parseArgs(["--namespace=team"], SPECS).flags.get("namespace"), "team");
  });

  it("takes a value for --wait only after '=', so the next word stays a positional", () => {
    const args = parseArgs(["--wait", "demo"], SPECS);
    assert.equal(args.flags.get("wait"), true);
    assert.deepEqual(args.positionals, ["demo"]);
  });

  it("ends the flags at --", () => {
    assert.deepEqual(parseArgs(["--", "--release"], SPECS).positionals, ["--release"]);
  });

  it("refuses unknown flags and a string flag without its value", () => {
    assert.throws(
      () => parseArgs(["--force"], SPECS),
      (e) => e instanceof UsageError && /--force/.test(e.message),
    );
    assert.throws(() => parseArgs(["-x"], SPECS), UsageError);
    assert.throws(() => parseArgs(["demo", "-n"], SPECS), /flag needs an argument: -n/);
    assert.throws(() => parseArgs(["--release=maybe"], SPECS), /want true or false/);
  });

  it("skips unknown flags when asked (completion of a half-typed line)", () => {
    assert.deepEqual(parseArgs(["--to", "node", "demo"], SPECS, true).positionals, ["node", "demo"]);
    assert.equal(parseArgs(["-n"], SPECS, true).flags.has("namespace"), false);
  });
});

describe("runPlugin finds the command after global flags", () => {
  it("takes the command from its own position, not from a flag value that spells the same", async () => {
    const { runPlugin } = await import("../../../src/plugin/cli.ts");
    const stderr: string[] = [];
    const io = {
      stdout: () => {},
      stderr: (t: string) => stderr.push(t),
      env: { KUBECONFIG: "/nonexistent/kubeconfig" },
      now: () => 0,
      sleep: async () => {},
    };
    // The context is named "snapshots"; the command "snapshots" comes later, without its SET.
    assert.equal(await runPlugin(["--context", "snapshots", "-n", "ns", "snapshots"], io), 2);
    assert.match(stderr.join(""), /snapshots needs SET/);
  });
});

describe("positionalWords", () => {
  it("skips flags and the values of string flags written apart", () => {
    assert.deepEqual(positionalWords(["-n", "team", "suspend", "--wait", "demo"], SPECS), [
      "suspend",
      "demo",
    ]);
  });
});
