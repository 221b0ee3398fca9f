// The names a CocoonRestore writes are the ones docs/checkpoints.md gives users to match on: its
// refusal reasons, the reasons it fails or waits with, its conditions, and its events. Every reason
// also goes into a condition, whose reason the API server admits only in metav1.Condition's form.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { REASON_SET_HELD } from "../../../src/holds.ts";
import * as keys from "../../../src/restore/keys.ts";

const DOC = readFileSync(new URL("../../../docs/checkpoints.md", import.meta.url), "utf8");

/** The text of the section headed `heading`, up to the next heading of any level. */
function section(heading: string): string {
  const start = DOC.indexOf(`\n${heading}\n`);
  assert.notEqual(start, -1, `docs/checkpoints.md has ${heading}`);
  const rest = DOC.slice(start + heading.length + 2);
  const end = rest.search(/\n#{2,3} /);
  return end === -1 ? rest : rest.slice(0, end);
}

/** The table rows of `text`, each a list of its cells (header and rule rows left out). */
function rows(text: string): string[][] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("|") && !line.startsWith("|---"))
    .slice(1)
    .map((line) =>
      line
        .split("|")
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
}

/** The words in backquotes of `cell`. */
function quoted(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? "");
}

describe("the CocoonRestore's names, as docs/checkpoints.md gives them", () => {
  it("each refusal has the reason the refusals table names", () => {
    const documented = rows(section("### Restoring: refusals")).flatMap((cells) => quoted(cells[1] ?? ""));
    assert.deepEqual(
      documented.sort(),
      [
        keys.REASON_SET_NOT_FOUND,
        keys.REASON_SET_DELETING,
        keys.REASON_RESTORE_IN_PROGRESS,
        keys.REASON_API_UNAVAILABLE,
        keys.REASON_CHECKPOINT_NOT_FOUND,
        keys.REASON_CHECKPOINT_DELETING,
        keys.REASON_CHECKPOINT_NOT_READY,
        keys.REASON_CHECKPOINT_OF_OTHER_SET,
        keys.REASON_NOTHING_TO_RESTORE,
        keys.REASON_INCOMPATIBLE,
      ].sort(),
    );
  });

  it("each event on a CocoonRestore has the reason and type the events table names", () => {
    const documented = rows(section("## Events"))
      .filter((cells) => (cells[0] ?? "").split(", ").includes("CocoonRestore"))
      .map((cells) => `${quoted(cells[1] ?? "").join()} ${cells[2]}`);
    assert.deepEqual(
      documented.sort(),
      [
        `${keys.EVENT_REFUSED} Warning`,
        `${keys.EVENT_STARTED} Normal`,
        `${keys.EVENT_COPIED} Normal`,
        `${keys.EVENT_COPY_FAILED} Warning`,
        `${keys.EVENT_FAILED} Warning`,
        `${REASON_SET_HELD} Normal`,
        `${keys.EVENT_WRITE_REFUSED} Warning`,
        `${keys.EVENT_RESTORED} Normal`,
      ].sort(),
    );
  });

  it("the reasons it fails with after it began, and its conditions, are the ones the text names", () => {
    const restoring = `${section("## Restoring a set in place")}\n${section("### Restoring: refusals")}`;
    assert.match(restoring, new RegExp(`Failed\` with reason \`${keys.REASON_DEADLINE_EXCEEDED}\``));
    assert.match(restoring, new RegExp(`reason to \`${keys.REASON_WRITE_REFUSED}\``));
    assert.match(restoring, new RegExp(`reason: ${keys.REASON_COPY_FAILED}\``));
    assert.match(restoring, new RegExp(`fails it \\(\`${keys.REASON_SET_DELETED}\`\\)`));
    assert.match(restoring, new RegExp(`where it is \\(\`${keys.REASON_HOLD_REMOVED}\`\\)`));
    assert.match(
      restoring,
      new RegExp(`the conditions \`${keys.CONDITION_RESTORED}\` and \`${keys.CONDITION_PROGRESSING}\``),
    );
  });
});

describe("the CocoonRestore's reasons in its conditions", () => {
  /** The CRD's schema of a condition's reason (metav1.Condition's), as the API server enforces it. */
  function crdReasonSchema(): { pattern: RegExp; minLength: number; maxLength: number } {
    const crd = readFileSync(
      new URL("../../../config/crd/bases/cocoonset.cocoonstack.io_cocoonrestores.yaml", import.meta.url),
      "utf8",
    );
    const m =
      /\n\s+reason:\n\s+description:[\s\S]*?maxLength: (\d+)\n\s+minLength: (\d+)\n\s+pattern: (\S+)\n/.exec(
        crd,
      );
    assert.ok(m, "the CRD gives a condition's reason a pattern");
    return { pattern: new RegExp(m[3] ?? ""), minLength: Number(m[2]), maxLength: Number(m[1]) };
  }

  it("each is one the API server admits as a condition's reason", () => {
    const schema = crdReasonSchema();
    const reasons = Object.entries(keys).filter(([name]) => name.startsWith("REASON_"));
    assert.notEqual(reasons.length, 0, "the reasons are exported under REASON_");
    for (const [name, reason] of reasons) {
      assert.match(reason, schema.pattern, name);
      assert.ok(reason.length >= schema.minLength && reason.length <= schema.maxLength, name);
    }
  });
});
