// The writes the steps share: a whole-value annotation is written at the version it was read at, a
// flag already cleared in this pass is not cleared again, a pod already gone deletes without error,
// an irreversible step's server read answers only for the very pod it cached, an unreadable reclaim
// record is logged, and a Warning about foreign VM names is raised only when there are some.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import { buildMainPod } from "../../../src/cocoonset/decide/pods.ts";
import {
  ANN_HIBERNATE,
  ANN_HIBERNATE_RECLAIM,
  ANN_SUSPENDING_SINCE,
  TRUE,
} from "../../../src/contract/keys.ts";
import { REASON_FOREIGN_VM_NAME_IGNORED } from "../../../src/contract/vmname.ts";
import { ConflictError } from "../../../src/controller/errors.ts";
import { COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import { createLogger } from "../../../src/log.ts";
import { EMPTY_RECLAIM } from "../../../src/pass/reclaimrecord.ts";
import {
  deletePod,
  keepOwnVMNames,
  patchPodFlag,
  patchSetAnnotations,
  readPodFromServer,
  reclaimRecord,
} from "../../../src/pass/writes.ts";
import { type ScalingHarness, scalingHarness, scalingSet } from "../../support/scaling.ts";

const NS = "ns";
const VM0 = "vk-ns-demo-0";
const RECORD = `{"generation":1,"vms":["${VM0}"]}`;

/** The set "demo" with its main pod stored. */
function withMain(): ScalingHarness {
  return scalingHarness(scalingSet(), (stored) => [buildMainPod(stored)]);
}

function main(h: ScalingHarness): Pod {
  return h.pod("demo-0") ?? assert.fail("main stored");
}

describe("patchSetAnnotations", () => {
  it("a write of the reclaim record beside another annotation fails over a newer set, the record kept", async () => {
    const h = withMain();
    const pass = h.pass();
    // Another write lands after the pass read the set: the pass's record is older than the server's.
    await h.client.patch(COCOONSETS, NS, "demo", {
      metadata: { annotations: { [ANN_HIBERNATE_RECLAIM]: RECORD } },
    });
    await assert.rejects(
      patchSetAnnotations(pass, {
        [ANN_HIBERNATE_RECLAIM]: `{"generation":1,"vms":["vk-ns-demo-1"]}`,
        [ANN_SUSPENDING_SINCE]: "2026-01-01T00:00:00Z",
      }),
      ConflictError,
    );
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATE_RECLAIM], RECORD);
    assert.equal(h.set().metadata.annotations?.[ANN_SUSPENDING_SINCE], undefined);
  });
});

describe("patchPodFlag", () => {
  it("a flag cleared once in a pass is not cleared again: the pass's copy shows it gone", async () => {
    const h = scalingHarness(scalingSet(), (stored) => {
      const pod = buildMainPod(stored);
      pod.metadata.annotations = { ...pod.metadata.annotations, [ANN_HIBERNATE]: TRUE };
      return [pod];
    });
    const pass = h.pass();
    const pod = pass.pods.main ?? assert.fail("main classified");
    h.client.clearCalls();
    await patchPodFlag(pass, pod, ANN_HIBERNATE, false);
    await patchPodFlag(pass, pod, ANN_HIBERNATE, false);
    assert.equal(h.client.writes().length, 1);
    assert.equal(ANN_HIBERNATE in (pod.metadata.annotations ?? {}), false);
    assert.equal(main(h).metadata.annotations?.[ANN_HIBERNATE], undefined);
  });
});

describe("deletePod", () => {
  it("a pod already gone is not an error; any other failure is", async () => {
    const h = withMain();
    const pass = h.pass();
    const pod = main(h);
    await deletePod(pass, pod);
    h.client.finishPodDeletion(NS, "demo-0");
    await deletePod(pass, pod);
    assert.deepEqual(h.deleted(), ["demo-0", "demo-0"]);

    const again = withMain();
    again.client.failNext("delete", PODS.plural, new Error("etcd unavailable"));
    await assert.rejects(deletePod(again.pass(), main(again)), /etcd unavailable/);
  });
});

describe("readPodFromServer", () => {
  it("answers with the server's copy of the same pod only: not a replacement, not a pod gone", async () => {
    const h = withMain();
    const pass = h.pass();
    const cached = main(h);
    assert.equal((await readPodFromServer(pass, cached))?.metadata.uid, cached.metadata.uid);

    const replacement = { ...structuredClone(cached), metadata: { ...cached.metadata, uid: "other" } };
    assert.equal(await readPodFromServer(pass, replacement), undefined);

    await deletePod(pass, cached);
    h.client.finishPodDeletion(NS, "demo-0");
    assert.equal(await readPodFromServer(pass, cached), undefined);
  });
});

describe("reclaimRecord", () => {
  it("an unreadable record reads as empty and is logged once at warn, naming the set", () => {
    const h = scalingHarness(scalingSet());
    const lines: Record<string, unknown>[] = [];
    h.deps.log = createLogger({ write: (line) => lines.push(JSON.parse(line)) });
    h.deps.log.level = "warn";
    const stored = h.set();
    stored.metadata.annotations = { [ANN_HIBERNATE_RECLAIM]: "{" };
    h.client.seed(COCOONSETS, stored);
    assert.deepEqual(reclaimRecord(h.pass()), EMPTY_RECLAIM);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.cocoonset, "ns/demo");

    stored.metadata.annotations = { [ANN_HIBERNATE_RECLAIM]: RECORD };
    h.client.seed(COCOONSETS, stored);
    assert.deepEqual(reclaimRecord(h.pass()).vms, [VM0]);
    assert.equal(lines.length, 1, "a readable record logs nothing");
  });
});

describe("keepOwnVMNames", () => {
  it("raises the foreign-name Warning only when a name is not the set's", () => {
    const h = scalingHarness(scalingSet());
    assert.deepEqual(keepOwnVMNames(h.pass(), [VM0], "hibernate-reclaim"), [VM0]);
    assert.deepEqual(h.events.events, []);
    assert.deepEqual(keepOwnVMNames(h.pass(), [VM0, "vk-other-prod-0"], "hibernate-reclaim"), [VM0]);
    assert.deepEqual(h.events.reasons(), [REASON_FOREIGN_VM_NAME_IGNORED]);
  });
});
