// Step 5: the set's generation is stamped on every owned pod that lacks it, in name order;
// a pod already stamped with the generation costs no call.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { stampGeneration } from "../../../src/cocoonset/steps/stamp.ts";
import { ANN_COCOONSET_GENERATION } from "../../../src/contract/keys.ts";
import { PODS } from "../../../src/controller/resources.ts";
import { classifyPods } from "../../../src/pass/classify.ts";
import { CONTINUE, Pass } from "../../../src/pass/pass.ts";
import { cocoonSet, type Harness, harness, NS, SET, seedSet, setPod } from "../../support/cocoonset.ts";
import { holdCalls, settle } from "../../support/hold.ts";

function passOver(h: Harness, generation: number, podsOf: (cs: CocoonSet) => Pod[]): Pass {
  const cs = seedSet(h.client, cocoonSet({}, { generation }));
  const pods = podsOf(cs).map((pod) => h.client.seed(PODS, pod));
  const owner = { name: SET, uid: cs.metadata.uid ?? "" };
  return new Pass(cs, classifyPods(pods, owner), h.deps, new AbortController().signal);
}

const stamp = (generation: string) => ({ annotations: { [ANN_COCOONSET_GENERATION]: generation } });

describe("stampGeneration", () => {
  it("stamps generation 7 on a pod without a stamp and on one stamped 5, in name order", async () => {
    const h = harness();
    const pass = passOver(h, 7, (cs) => [
      setPod(cs, "demo-1", "sub-agent", "1", stamp("5")),
      setPod(cs, "demo-0", "main", "0"),
    ]);

    assert.equal(await stampGeneration(pass), CONTINUE);

    assert.deepEqual(
      h.client.writes().map((c) => [c.verb, c.resource, c.name, c.body]),
      [
        ["patch", "pods", "demo-0", { metadata: { annotations: { [ANN_COCOONSET_GENERATION]: "7" } } }],
        ["patch", "pods", "demo-1", { metadata: { annotations: { [ANN_COCOONSET_GENERATION]: "7" } } }],
      ],
    );
    for (const name of ["demo-0", "demo-1"]) {
      const pod = h.client.peek<Pod>(PODS, NS, name);
      assert.equal(pod?.metadata.annotations?.[ANN_COCOONSET_GENERATION], "7");
    }
    assert.equal(
      pass.pods.main?.metadata.annotations?.[ANN_COCOONSET_GENERATION],
      "7",
      "the pass sees its write",
    );
  });

  it("stamps the pods together: the second patch goes out while the first is unanswered", async () => {
    const h = harness();
    const pass = passOver(h, 7, (cs) => [
      setPod(cs, "demo-0", "main", "0"),
      setPod(cs, "demo-1", "sub-agent", "1"),
    ]);
    const { sent, release } = holdCalls(h.client, "patch", "demo-0");
    const step = stampGeneration(pass);
    await settle();
    assert.deepEqual(sent, ["patch pods/demo-0", "patch pods/demo-1"]);
    release();
    assert.equal(await step, CONTINUE);
  });

  it("a refused stamp fails the step", async () => {
    const h = harness();
    const pass = passOver(h, 7, (cs) => [setPod(cs, "demo-0", "main", "0")]);
    h.client.failNext("patch", "pods", new Error("refused"));
    await assert.rejects(stampGeneration(pass), /refused/);
  });

  it("makes no call for a pod already stamped with the generation", async () => {
    const h = harness();
    const pass = passOver(h, 3, (cs) => [setPod(cs, "demo-0", "main", "0", stamp("3"))]);
    await stampGeneration(pass);
    assert.deepEqual(h.client.calls, []);
  });

  it("leaves a pod that only carries the label alone", async () => {
    const h = harness();
    const pass = passOver(h, 2, (cs) => [setPod(cs, "demo-0", "main", "0", { ...stamp("1"), owned: false })]);
    await stampGeneration(pass);
    assert.deepEqual(h.client.calls, []);
  });
});
