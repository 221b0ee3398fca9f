// What a checkpoint holds apart from its set's current :hibernate snapshots (src/checkpoint/size.ts).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { bytesNotIn, settledSetGeneration } from "../../../src/checkpoint/size.ts";
import { ANN_HIBERNATE_RECLAIM } from "../../../src/contract/keys.ts";
import { cocoonSet } from "../../support/cocoonset.ts";

const blob = (digest: string, size: number) => ({ mediaType: "x", digest, size });
const manifest = (...blobs: ReturnType<typeof blob>[]) => ({ config: blobs[0], layers: blobs.slice(1) });

describe("bytesNotIn", () => {
  it("counts the blobs the current snapshot does not reference, and all of them without one", () => {
    const held = manifest(blob("sha256:c", 10), blob("sha256:base", 1000), blob("sha256:mem", 500));
    assert.equal(bytesNotIn(held, held), 0);
    assert.equal(bytesNotIn(held, manifest(blob("sha256:c2", 12), blob("sha256:base", 1000))), 510);
    assert.equal(bytesNotIn(held, undefined), 1510);
  });
});

describe("settledSetGeneration", () => {
  const at = (phase: "Suspended" | "Running" | "Suspending", observed: number, annotations = {}) => ({
    ...cocoonSet({}, { generation: 4, annotations }),
    status: {
      phase,
      observedGeneration: observed,
      readyAgents: 0,
      desiredAgents: 1,
      readyToolboxes: 0,
      desiredToolboxes: 0,
    },
  });
  it("is the generation once the :hibernate tags are settled for it, else undefined", () => {
    assert.equal(settledSetGeneration(at("Suspended", 4)), 4);
    assert.equal(settledSetGeneration(at("Running", 4)), 4);
    assert.equal(
      settledSetGeneration(at("Running", 4, { [ANN_HIBERNATE_RECLAIM]: "{}" })),
      undefined,
      "tags still to drop",
    );
    assert.equal(settledSetGeneration(at("Suspended", 3)), undefined, "not caught up");
    assert.equal(settledSetGeneration(at("Suspending", 4)), undefined);
    assert.equal(settledSetGeneration(undefined), undefined);
    const bare = cocoonSet({}, { generation: 4 });
    assert.equal(settledSetGeneration(bare), undefined, "no status yet");
    assert.equal(settledSetGeneration({ ...at("Running", 4), metadata: bare.metadata }), 4, "no annotations");
  });
});
