// The names warm pools add to the contract are the ones docs/pools.md gives users: labels, the
// template annotation, finalizers, reasons and event reasons; members are named as generateName would.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, it } from "node:test";
import * as keys from "../../../src/pool/keys.ts";
import { generatedName } from "../../../src/pool/names.ts";

const docs = readFileSync(resolve(import.meta.dirname, "../../../docs/pools.md"), "utf8");

describe("pool names", () => {
  it("the labels, the template annotation and the finalizers are those the docs name", () => {
    assert.deepEqual(
      [
        keys.LABEL_POOL,
        keys.LABEL_CLAIM,
        keys.LABEL_CLAIMED_FROM,
        keys.ANN_POOL_TEMPLATE,
        keys.FINALIZER_COCOONPOOL,
        keys.FINALIZER_COCOONCLAIM,
        keys.CONDITION_READY,
      ],
      [
        "cocoonset.cocoonstack.io/pool",
        "cocoonset.cocoonstack.io/claim",
        "cocoonset.cocoonstack.io/claimed-from",
        "cocoonset.cocoonstack.io/pool-template",
        "cocoonpool.cocoonset.cocoonstack.io/finalizer",
        "cocoonclaim.cocoonset.cocoonstack.io/finalizer",
        "Ready",
      ],
    );
  });

  it("every reason is one the docs give: events in the event table, the others in the text", () => {
    const reasons = Object.entries(keys).filter(([name]) => name.startsWith("REASON_"));
    assert.ok(reasons.length >= 15);
    for (const [name, reason] of reasons) {
      // A condition's or event's reason is a CamelCase word (metav1.Condition's reason pattern).
      assert.match(reason as string, /^[A-Z][A-Za-z0-9]*$/, name);
      const onPool = docs.includes(`| CocoonPool | \`${reason}\` |`);
      const onClaim = docs.includes(`| CocoonClaim | \`${reason}\` |`);
      assert.ok(onPool || onClaim || docs.includes(`\`${reason}\``), `${name} = ${JSON.stringify(reason)}`);
    }
  });

  it("a member's name is the pool's and five characters of generateName's alphabet", () => {
    for (let i = 0; i < 50; i++)
      assert.match(generatedName("warm"), /^warm-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });
});
