// The suite's own parts, shown able to fail, and the client fix it led to:
//  - the invariant checker flags a live destroy (a), a premature tag delete (b), a refusal (c) and a
//    wake of a pod whose image changed (c), and allows an image change's drop of that snapshot; it
//    flags a live checkpoint's tag deleted, a deleted checkpoint's manifest read by a copy, and a
//    checkpoint's copy into :hibernate dropped before its VM woke from it (e);
//  - the checker of the chaos across features flags a DELETE outside a set's own VMs (g), a claim
//    bound to two sets, a set to two claims and a claim reporting a set another claim bound (h), a
//    tag a Ready checkpoint or an owed wake needs gone or moved (f), an object that did not
//    converge giving no reason (i), a claim Ready before its PostClaim hooks succeeded on its set's
//    VMs (k) and a Running set naming a guest policy whose VM's post hooks did not succeed (l);
//  - the namespace scoping of the API proxy, and its lost reply (a set write applied, its answer lost);
//  - finding: the API client surfaced a 429 at once instead of waiting Retry-After and retrying as
//    client-go does; src/controller/client.ts now retries (up to 10 times).

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet, CocoonSetPhase, CocoonSetStatus } from "../../src/apis/v1/types.ts";
import type {
  CocoonCheckpoint,
  CocoonClaim,
  CocoonPool,
  CocoonRestore,
} from "../../src/apis/v1alpha1/types.ts";
import type { Clock } from "../../src/clock.ts";
import { ANN_HIBERNATE_RECLAIM, ANN_MANAGED, ANN_VM_ID } from "../../src/contract/keys.ts";
import { KubeClient, MAX_RETRY_AFTER_RETRIES } from "../../src/controller/client.ts";
import { isTooManyRequests } from "../../src/controller/errors.ts";
import { kubeconfigFromDocument, restConfigFromKubeconfig } from "../../src/controller/kubeconfig.ts";
import { COCOONSETS } from "../../src/controller/resources.ts";
import { ANN_GUEST_HOOKS, ANN_GUEST_POLICY } from "../../src/guest/keys.ts";
import { LABEL_POOL } from "../../src/pool/keys.ts";
import { selfSignedCertificate } from "../env/certs.ts";
import { type VmEvent, VmRecord } from "../env/simulator/index.ts";
import { apiRequest } from "../env/testenv.ts";
import { type RegistryProxy, type RegistryRequest, scopePath, startApiProxy } from "../support/faultproxy.ts";
import { FeatureInvariants, guestFindings, neededTags, unconverged } from "../support/featureinvariants.ts";
import { InvariantChecker } from "../support/invariants.ts";

function fakeRegistry(): RegistryProxy & { emit(r: Partial<RegistryRequest>): void } {
  const listeners: ((r: RegistryRequest) => void)[] = [];
  return {
    host: "fake",
    requests: [],
    fault: "none",
    setFault: async () => {},
    onRequest: (l) => listeners.push(l),
    setBodyLimit: () => {},
    cutUploadAfter: () => {},
    bufferBodies: () => {},
    gateDeletes: () => {},
    stop: async () => {},
    emit(r) {
      for (const l of listeners)
        l({ time: Date.now(), method: "DELETE", path: "/", status: 202, bytesIn: 0, ...r });
    },
  };
}

function vmEvent(kind: VmEvent["kind"], vmID: string, detail?: string): VmEvent {
  return {
    time: Date.now(),
    kind,
    vmName: "vk-ns-s-0",
    namespace: "ns",
    podName: "s-0",
    podUID: "u1",
    node: "n",
    vmID,
    ...(detail ? { detail } : {}),
  };
}

it("the checker flags a live VM destroyed outside teardown (a)", () => {
  const record = new VmRecord();
  const checker = new InvariantChecker({ record, registry: fakeRegistry() });
  record.append(vmEvent("boot", "id1"));
  record.append(vmEvent("destroy", "id1", "pod deleted"));
  assert.throws(() => checker.check(), /invariant \(a\).*live VM vk-ns-s-0/s);
});

it("the checker accepts hibernate → delete → restore → tag drop, and flags a drop before the restore (b)", () => {
  const record = new VmRecord();
  const registry = fakeRegistry();
  const checker = new InvariantChecker({ record, registry });
  record.append(vmEvent("boot", "id1"));
  record.append(vmEvent("hibernate", "id1"));
  record.append(vmEvent("destroy", ""));
  record.append(vmEvent("restore", "id2"));
  registry.emit({ path: "/v2/vk-ns-s-0/manifests/sha256:abc" });
  checker.check();
  record.append(vmEvent("hibernate", "id2"));
  registry.emit({ path: "/v2/vk-ns-s-0/manifests/sha256:def" });
  assert.throws(() => checker.check(), /invariant \(b\)/);
});

it("the checker flags a live checkpoint's tag deleted, and allows it once the test deleted the checkpoint (e)", () => {
  const record = new VmRecord();
  const registry = fakeRegistry();
  const checker = new InvariantChecker({ record, registry });
  registry.emit({ method: "PUT", path: "/v2/vk-ns-s-0/manifests/ckpt-c1", status: 201, digest: "sha256:c1" });
  registry.emit({ method: "PUT", path: "/v2/vk-ns-s-0/manifests/ckpt-c2", status: 201, digest: "sha256:c2" });
  checker.checkpointDeleted("c1");
  registry.emit({ path: "/v2/vk-ns-s-0/manifests/sha256:c1" });
  checker.check();
  assert.equal(checker.counts.checkpointTagDeletes, 1);
  registry.emit({ path: "/v2/vk-ns-s-0/manifests/sha256:c2" });
  assert.throws(() => checker.check(), /invariant \(e\).*ckpt-c2 .*while CocoonCheckpoint c2 is live/s);
});

it("the checker flags a copy reading a checkpoint manifest the operator deleted (e)", () => {
  const record = new VmRecord();
  const registry = fakeRegistry();
  const checker = new InvariantChecker({ record, registry });
  registry.emit({
    method: "HEAD",
    path: "/v2/vk-ns-s-0/manifests/ckpt-c1",
    status: 200,
    digest: "sha256:c1",
  });
  checker.checkpointDeleted("c1");
  registry.emit({ path: "/v2/vk-ns-s-0/manifests/sha256:c1" });
  checker.check();
  registry.emit({ method: "GET", path: "/v2/vk-ns-s-0/manifests/sha256:c1", status: 404 });
  assert.throws(() => checker.check(), /invariant \(e\).*checkpoint c1's manifest, after deleting it/s);
});

it("the checker holds a checkpoint's copy into :hibernate until its VM wakes from it (e)", () => {
  const record = new VmRecord();
  const registry = fakeRegistry();
  const checker = new InvariantChecker({ record, registry });
  record.append(vmEvent("boot", "id1"));
  record.append(vmEvent("hibernate", "id1"));
  record.append(vmEvent("wake", "id2"));
  record.append(vmEvent("hibernate", "id2"));
  // The restore's copy replaces the live snapshot; dropping it before the wake loses the restore.
  registry.emit({
    method: "PUT",
    path: "/v2/vk-ns-s-0/manifests/hibernate",
    status: 201,
    digest: "sha256:cp",
  });
  registry.emit({ path: "/v2/vk-ns-s-0/manifests/sha256:cp" });
  assert.throws(() => checker.check(), /invariant \(b\).*while no VM restored from it runs/s);

  const record2 = new VmRecord();
  const registry2 = fakeRegistry();
  const after = new InvariantChecker({ record: record2, registry: registry2 });
  record2.append(vmEvent("boot", "id1"));
  record2.append(vmEvent("hibernate", "id1"));
  registry2.emit({
    method: "PUT",
    path: "/v2/vk-ns-s-0/manifests/hibernate",
    status: 201,
    digest: "sha256:cp",
  });
  record2.append(vmEvent("wake", "id2"));
  registry2.emit({ path: "/v2/vk-ns-s-0/manifests/sha256:cp" });
  after.check();
  assert.equal(after.counts.hibernateCopies, 1);
});

it("the checker flags a refusal (c) and allows teardown", () => {
  const record = new VmRecord();
  const checker = new InvariantChecker({ record, registry: fakeRegistry() });
  checker.teardown("vk-ns-s-");
  record.append(vmEvent("boot", "id1"));
  record.append(vmEvent("destroy", "id1", "pod deleted"));
  checker.check();
  record.append(vmEvent("refuse", "", "HibernateEvidenceFailed: came from image"));
  assert.throws(() => checker.check(), /invariant \(c\)/);
});

const PUSHED = `sha256:${"a".repeat(64)}`;
const LOST_WAKE = "WakePullFailed: pull vk-ns-s-0:hibernate: manifest not found";

/** A VM hibernated (its push digest named, as the simulator journals it) whose image the test changed. */
function imageChangedAfterHibernate(): {
  record: VmRecord;
  registry: ReturnType<typeof fakeRegistry>;
  checker: InvariantChecker;
} {
  const record = new VmRecord();
  const registry = fakeRegistry();
  const checker = new InvariantChecker({ record, registry });
  record.append(vmEvent("boot", "id1"));
  record.append(vmEvent("hibernate", "id1", `pushed vk-ns-s-0:hibernate ${PUSHED}`));
  checker.allowImageDrop("vk-ns-s-0");
  return { record, registry, checker };
}

it("an image change allows the operator's drop of that snapshot and the old pod's hibernated delete", () => {
  const { record, registry, checker } = imageChangedAfterHibernate();
  registry.emit({ path: `/v2/vk-ns-s-0/manifests/${PUSHED}` });
  record.append(vmEvent("destroy", "", "no live VM (hibernated)"));
  checker.check();
  assert.match(
    checker.history(),
    new RegExp(`DELETE vk-ns-s-0:${PUSHED} \\(= its last :hibernate push\\) → 202`),
  );
});

it("an image change does not excuse the old pod's wake refused after the drop (c)", () => {
  const { record, registry, checker } = imageChangedAfterHibernate();
  registry.emit({ path: `/v2/vk-ns-s-0/manifests/${PUSHED}` });
  record.append(vmEvent("refuse", "", LOST_WAKE));
  assert.throws(() => checker.check(), /invariant \(c\).*manifest not found/s);
});

it("a wake of the old pod after an image change is flagged: that pod is rebuilt, the wake wasted (c)", () => {
  const { record, checker } = imageChangedAfterHibernate();
  record.append(vmEvent("wake", "id2"));
  assert.throws(() => checker.check(), /invariant \(c\).*woken though its image changed/s);
});

it("a DELETE of another manifest's digest leaves the :hibernate tag; one of the last push's removes it (b)", () => {
  const record = new VmRecord();
  const registry = fakeRegistry();
  const checker = new InvariantChecker({ record, registry });
  record.append(vmEvent("boot", "id1"));
  record.append(vmEvent("hibernate", "id1", `pushed vk-ns-s-0:hibernate ${PUSHED}`));
  registry.emit({ path: `/v2/vk-ns-s-0/manifests/sha256:${"b".repeat(64)}` });
  record.append(vmEvent("destroy", "", "no live VM (hibernated)"));
  checker.check();
  registry.emit({ path: `/v2/vk-ns-s-0/manifests/${PUSHED}` });
  assert.throws(() => checker.check(), /invariant \(b\)/);
});

it("the API proxy scopes cluster-wide paths to its namespace", () => {
  assert.equal(scopePath("/api/v1/pods?watch=true", "ns"), "/api/v1/namespaces/ns/pods?watch=true");
  assert.equal(
    scopePath("/apis/cocoonset.cocoonstack.io/v1/cocoonsets", "ns"),
    "/apis/cocoonset.cocoonstack.io/v1/namespaces/ns/cocoonsets",
  );
  assert.equal(scopePath("/api/v1/namespaces/other/pods/x", "ns"), undefined);
  assert.equal(scopePath("/api/v1/namespaces/ns/pods/x", "ns"), "/api/v1/namespaces/ns/pods/x");
});

async function fakeApiserver(
  answers: number[],
): Promise<{ url: string; seen: () => number; close: () => void }> {
  let seen = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    const status = answers[Math.min(seen, answers.length - 1)] ?? 200;
    seen++;
    if (status === 429) {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "1" });
      res.end(JSON.stringify({ kind: "Status", code: 429, reason: "TooManyRequests", message: "slow down" }));
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ metadata: { name: "s", namespace: "ns" } }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen: () => seen,
    close: () => server.close(),
  };
}

function clientFor(url: string, sleeps: number[]): KubeClient {
  const kubeConfig = restConfigFromKubeconfig(
    kubeconfigFromDocument(
      {
        clusters: [{ name: "c", cluster: { server: url } }],
        users: [{ name: "u" }],
        contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
        "current-context": "x",
      },
      process.cwd(),
    ),
  );
  const clock: Clock = {
    now: () => Date.now(),
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  };
  return new KubeClient({ kubeConfig, clock });
}

it("the API client waits Retry-After and retries a 429 (finding, fixed)", async () => {
  const server = await fakeApiserver([429, 429, 200]);
  const sleeps: number[] = [];
  const client = clientFor(server.url, sleeps);
  try {
    const got = await client.get<{ metadata: { name: string } }>(COCOONSETS, "ns", "s");
    assert.equal(got.metadata.name, "s");
    assert.deepEqual(sleeps, [1000, 1000]);
    assert.equal(server.seen(), 3);
  } finally {
    client.close();
    server.close();
  }
});

it("the API client gives up after the retry budget and surfaces TooManyRequests", async () => {
  const server = await fakeApiserver([429]);
  const sleeps: number[] = [];
  const client = clientFor(server.url, sleeps);
  try {
    await assert.rejects(client.patch(COCOONSETS, "ns", "s", {}), (err) => isTooManyRequests(err));
    assert.equal(sleeps.length, MAX_RETRY_AFTER_RETRIES);
    assert.equal(server.seen(), MAX_RETRY_AFTER_RETRIES + 1);
  } finally {
    client.close();
    server.close();
  }
});

/** A checker of the chaos across features over a fake registry, and its own checker's violations. */
function featureChecker(): {
  registry: ReturnType<typeof fakeRegistry>;
  checker: InvariantChecker;
  features: FeatureInvariants;
} {
  const registry = fakeRegistry();
  const checker = new InvariantChecker({ record: new VmRecord(), registry });
  const features = new FeatureInvariants(checker, "ns");
  registry.onRequest((r) => features.observeRegistry(r));
  return { registry, checker, features };
}

function aSet(
  name: string,
  opts: {
    uid?: string;
    replicas?: number;
    suspend?: boolean;
    phase?: string;
    generation?: number;
    observed?: number;
    owner?: { kind: string; name: string; uid: string };
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    conditions?: { type: string; status: string; reason: string }[];
  } = {},
): CocoonSet {
  const replicas = opts.replicas ?? 0;
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: {
      name,
      namespace: "ns",
      uid: opts.uid ?? `uid-${name}`,
      generation: opts.generation ?? 1,
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
      ...(opts.labels ? { labels: opts.labels } : {}),
      ...(opts.owner ? { ownerReferences: [{ apiVersion: "x", controller: true, ...opts.owner }] } : {}),
    },
    spec: {
      nodePool: "p",
      agent: { image: "i", replicas, mode: "clone" },
      ...(opts.suspend ? { suspend: true } : {}),
    },
    status: {
      phase: (opts.phase ?? "Running") as CocoonSetPhase,
      observedGeneration: opts.observed ?? opts.generation ?? 1,
      readyAgents: opts.phase === undefined || opts.phase === "Running" ? replicas + 1 : 0,
      desiredAgents: replicas + 1,
      readyToolboxes: 0,
      desiredToolboxes: 0,
      ...(opts.conditions ? { conditions: opts.conditions as CocoonSetStatus["conditions"] } : {}),
    },
  } as CocoonSet;
}

it("the feature checker allows a DELETE in a set's own VM and flags one in another namespace's or a slot the set never had (g)", () => {
  const { registry, checker, features } = featureChecker();
  features.observeSet(aSet("p0", { replicas: 1 }));
  registry.emit({ path: "/v2/vk-ns-p0-0/manifests/sha256:a" });
  registry.emit({ path: "/v2/vk-ns-p0-1/manifests/sha256:b" });
  checker.check();
  assert.equal(features.counts.deletes, 2);
  registry.emit({ path: "/v2/vk-other-prod-0/manifests/sha256:c" });
  assert.throws(
    () => checker.check(),
    /invariant \(g\).*DELETE vk-other-prod-0@sha256:c .*not a VM of any set of namespace ns/s,
  );

  const slot = featureChecker();
  slot.features.observeSet(aSet("p0", { replicas: 0 }));
  slot.registry.emit({ path: "/v2/vk-ns-p0-3/manifests/sha256:d" });
  assert.throws(() => slot.checker.check(), /invariant \(g\).*vk-ns-p0-3/s);
});

it("the feature checker flags a claim that controls two sets, a set bound to two claims, and a claim reporting another claim's set (h)", () => {
  const pool = { kind: "CocoonPool", name: "warm", uid: "pool" };
  const claimA = { kind: "CocoonClaim", name: "a", uid: "ca" };
  const ok = featureChecker();
  ok.features.observeSet(aSet("warm-1", { owner: pool }));
  ok.features.observeClaim({
    metadata: { name: "a", uid: "ca" },
    status: { cocoonSetRef: { name: "warm-1" } },
  } as CocoonClaim);
  ok.features.observeSet(aSet("warm-1", { owner: claimA }));
  ok.features.observeClaim({
    metadata: { name: "a", uid: "ca" },
    status: { cocoonSetRef: { name: "warm-1" } },
  } as CocoonClaim);
  ok.checker.check();

  const twoSets = featureChecker();
  twoSets.features.observeSet(aSet("warm-1", { owner: claimA }));
  twoSets.features.observeSet(aSet("warm-2", { owner: claimA }));
  assert.throws(() => twoSets.checker.check(), /invariant \(h\).*claim a \(uid ca\) controls a second set/s);

  const twoClaims = featureChecker();
  twoClaims.features.observeSet(aSet("warm-1", { owner: claimA }));
  twoClaims.features.observeSet(aSet("warm-1", { owner: { ...claimA, uid: "cb" } }));
  assert.throws(() => twoClaims.checker.check(), /invariant \(h\).*bound to a second claim/s);

  const adopted = featureChecker();
  adopted.features.observeSet(aSet("warm-1", { owner: claimA }));
  adopted.features.observeClaim({
    metadata: { name: "a", uid: "ca2" },
    status: { cocoonSetRef: { name: "warm-1" } },
  } as CocoonClaim);
  assert.throws(
    () => adopted.checker.check(),
    /invariant \(h\).*uid ca2\) reports set warm-1, which claim uid ca bound/s,
  );
});

it("the feature checker flags a tag a Ready checkpoint or a suspended set's owed wake needs, gone or moved (f)", async () => {
  const checkpoint = (name: string, deleting = false) =>
    ({
      metadata: { name, ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}) },
      spec: { cocoonSetRef: { name: "p0" } },
      status: {
        phase: "Ready",
        members: [{ role: "main", slot: 0, vmName: "vk-ns-p0-0", digest: "sha256:k" }],
      },
    }) as CocoonCheckpoint;
  const suspended = aSet("p1", {
    suspend: true,
    phase: "Suspended",
    annotations: {
      [ANN_HIBERNATE_RECLAIM]: JSON.stringify({
        generation: 1,
        vms: ["vk-ns-p1-0"],
        restore: ["vk-ns-p1-0"],
      }),
    },
  });
  const needed = neededTags({
    sets: [suspended],
    pools: [],
    checkpoints: [checkpoint("k1"), checkpoint("k2", true)],
  });
  assert.deepEqual(
    needed.map((t) => `${t.vmName}:${t.tag}`),
    ["vk-ns-p0-0:ckpt-k1", "vk-ns-p1-0:hibernate"],
  );
  const tags = new Map([
    ["vk-ns-p0-0:ckpt-k1", "sha256:k"],
    ["vk-ns-p1-0:hibernate", "sha256:h"],
  ]);
  const all = featureChecker();
  await all.features.checkTags(needed, async (vm, tag) => tags.get(`${vm}:${tag}`));
  all.checker.check();

  const gone = featureChecker();
  tags.delete("vk-ns-p1-0:hibernate");
  await gone.features.checkTags(needed, async (vm, tag) => tags.get(`${vm}:${tag}`));
  assert.throws(
    () => gone.checker.check(),
    /invariant \(f\).*vk-ns-p1-0:hibernate is gone, but CocoonSet p1/s,
  );

  const moved = featureChecker();
  tags.set("vk-ns-p1-0:hibernate", "sha256:h");
  tags.set("vk-ns-p0-0:ckpt-k1", "sha256:other");
  await moved.features.checkTags(needed, async (vm, tag) => tags.get(`${vm}:${tag}`));
  assert.throws(() => moved.checker.check(), /invariant \(f\).*ckpt-k1 names sha256:other, not sha256:k/s);
});

it("the feature checker flags an object that did not converge and gives only a progress word, or a stale status (i)", () => {
  const claim = (name: string, phase: string, reason: string, ready: string) =>
    ({
      metadata: { name },
      status: { phase, reason, conditions: [{ type: "Ready", status: ready, reason }] },
    }) as CocoonClaim;
  const objects = {
    sets: [
      aSet("running"),
      aSet("stale", { generation: 3, observed: 2 }),
      aSet("waiting", {
        phase: "Pending",
        conditions: [{ type: "Branched", status: "False", reason: "WaitingForCheckpoint" }],
      }),
    ],
    pools: [],
    claims: [
      claim("ok", "Bound", "SetRunning", "True"),
      claim("waking", "Bound", "Waking", "False"),
      claim("pending", "Pending", "NoReadyMember", "False"),
    ],
    restores: [
      { metadata: { name: "copying" }, status: { phase: "Restoring", reason: "Copying" } },
      { metadata: { name: "refused" }, status: { phase: "Restoring", reason: "CopyFailed" } },
    ] as CocoonRestore[],
    checkpoints: [
      {
        metadata: { name: "k-pending" },
        spec: { cocoonSetRef: { name: "running" } },
        status: { phase: "Pending" },
      },
    ] as CocoonCheckpoint[],
  };
  const left = unconverged(objects);
  assert.deepEqual(
    left.map((u) => `${u.kind} ${u.name}: ${u.reasons.join(",") || "-"}`),
    [
      "CocoonSet stale: -",
      "CocoonSet waiting: Branched=WaitingForCheckpoint",
      "CocoonClaim waking: -",
      "CocoonClaim pending: Ready=NoReadyMember,NoReadyMember",
      "CocoonRestore copying: -",
      "CocoonRestore refused: CopyFailed",
      "CocoonCheckpoint k-pending: Pending: its set is not Suspended",
    ],
  );
  const { checker, features } = featureChecker();
  features.checkReasons(left);
  assert.equal(checker.violations.length, 3);
  assert.throws(
    () => checker.check(),
    /invariant \(i\).*CocoonSet stale did not converge \(wanted Running, shows Running at generation 2 of 3\)/s,
  );
  assert.match(checker.violations[1] ?? "", /CocoonClaim waking did not converge/);
  assert.match(checker.violations[2] ?? "", /CocoonRestore copying did not converge/);
});

it("the feature checker takes a pool that cannot fill as explained only when it or each member not ready says why (i)", () => {
  const pool = {
    metadata: { name: "warm", generation: 1 },
    spec: { replicas: 2 },
    status: {
      observedGeneration: 1,
      ready: 1,
      replicas: 2,
      conditions: [{ type: "Ready", status: "False", reason: "Filling" }],
    },
  } as CocoonPool;
  const member = (reason: string) =>
    aSet("warm-1", {
      suspend: true,
      phase: "Pending",
      labels: { [LABEL_POOL]: "warm" },
      conditions: [{ type: "Branched", status: "False", reason }],
    });
  const explained = unconverged({
    sets: [member("WaitingForCheckpoint")],
    pools: [pool],
    claims: [],
    restores: [],
    checkpoints: [],
  });
  assert.deepEqual(explained.find((u) => u.kind === "CocoonPool")?.reasons, [
    "warm-1: Branched=WaitingForCheckpoint",
  ]);
  const silent = unconverged({
    sets: [member("Copying")],
    pools: [pool],
    claims: [],
    restores: [],
    checkpoints: [],
  });
  assert.deepEqual(silent.find((u) => u.kind === "CocoonPool")?.reasons, []);
});

it("with a teardown grace, a loss counts only if its set is not declared in teardown within it", async () => {
  const lossOf = (graceMs: number) => {
    const record = new VmRecord();
    const checker = new InvariantChecker({ record, registry: fakeRegistry(), teardownGraceMs: graceMs });
    record.append(vmEvent("boot", "id1"));
    record.append(vmEvent("destroy", "id1", "pod deleted"));
    return checker;
  };
  const excused = lossOf(50);
  excused.teardown("vk-ns-s-");
  await excused.settled();
  excused.check();
  const lost = lossOf(50);
  assert.doesNotThrow(() => lost.check(), "judged only once the grace has passed");
  await lost.settled();
  assert.throws(() => lost.check(), /invariant \(a\).*live VM vk-ns-s-0/s);
});

it("the API proxy's lost reply applies a set write upstream and resets the client's connection", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cocoon-lostreply-"));
  const { certFile, keyFile } = selfSignedCertificate(dir, "upstream", {
    subject: "/CN=127.0.0.1",
    altNames: "IP:127.0.0.1",
  });
  const applied: string[] = [];
  const upstream = https.createServer(
    { key: readFileSync(keyFile), cert: readFileSync(certFile) },
    (req, res) => {
      req.resume();
      applied.push(`${req.method} ${req.url}`);
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    },
  );
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
  const server = `https://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const proxy = await startApiProxy(
    { server, token: "t", caFile: certFile },
    { namespace: "ns", seed: 1, faults: { lostReply: 1 } },
  );
  try {
    const path = "/apis/cocoonset.cocoonstack.io/v1/namespaces/ns/cocoonsets/s";
    // The proxy's own certificate, as its kubeconfig carries it.
    const kubeconfig = JSON.parse(readFileSync(proxy.kubeconfigPath, "utf8"));
    const proxyCa = join(dir, "proxy-ca.crt");
    writeFileSync(
      proxyCa,
      Buffer.from(kubeconfig.clusters[0].cluster["certificate-authority-data"], "base64"),
    );
    const proxied = { server: proxy.server, token: "t", caFile: proxyCa };
    await assert.rejects(apiRequest(proxied, "PUT", path, {}), /socket hang up|ECONNRESET/);
    assert.deepEqual(applied, [`PUT ${path}`]);
    assert.equal(proxy.counts.lostReplies, 1);
    // A read, and a status write, are answered.
    assert.equal((await apiRequest(proxied, "GET", path)).status, 200);
    assert.equal((await apiRequest(proxied, "PUT", `${path}/status`, {})).status, 200);
  } finally {
    await proxy.stop();
    upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

it("the feature checker keeps a pool's fromCheckpoint and its tags, even while it is being deleted (f)", async () => {
  const pool = { metadata: { name: "warm" }, spec: { replicas: 1, fromCheckpoint: "golden" } } as CocoonPool;
  const golden = {
    metadata: { name: "golden", deletionTimestamp: "2026-01-01T00:00:00Z" },
    spec: { cocoonSetRef: { name: "p0" } },
    status: {
      phase: "Ready",
      members: [{ role: "main", slot: 0, vmName: "vk-ns-p0-0", digest: "sha256:g" }],
    },
  } as CocoonCheckpoint;
  const deletingButThere = neededTags({ sets: [], pools: [pool], checkpoints: [golden] });
  assert.deepEqual(
    deletingButThere.map((t) => `${t.vmName}:${t.tag} for ${t.neededBy}`),
    ["vk-ns-p0-0:ckpt-golden for CocoonPool warm (fromCheckpoint golden)"],
  );
  const kept = featureChecker();
  await kept.features.checkTags(deletingButThere, async () => "sha256:g");
  kept.checker.check();

  const gone = featureChecker();
  await gone.features.checkTags(
    neededTags({ sets: [], pools: [pool], checkpoints: [] }),
    async () => undefined,
  );
  assert.throws(
    () => gone.checker.check(),
    /invariant \(f\).*the checkpoint of ckpt-golden is gone, but CocoonPool warm/s,
  );

  assert.deepEqual(neededTags({ sets: [], pools: [pool], checkpoints: [] }, new Set(["golden"])), []);
});

/** A Ready pod of set `set` running VM `vmID`, its guest-hooks record `record` (none when absent). */
function aPod(name: string, vmID: string, resourceVersion: string, record?: object): Pod {
  return {
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion,
      annotations: {
        [ANN_MANAGED]: "true",
        [ANN_VM_ID]: vmID,
        ...(record ? { [ANN_GUEST_HOOKS]: JSON.stringify(record) } : {}),
      },
    },
    spec: { containers: [] },
    status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
  } as unknown as Pod;
}

const succeeded = { result: "Succeeded", at: "2026-01-01T00:00:00Z", policyGeneration: 1 };

it("the feature checker flags a claim turned Ready before its PostClaim hooks succeeded on a VM unchanged since (k)", () => {
  const claim = (name: string, resourceVersion: string) =>
    ({
      metadata: { name, uid: `uid-${name}`, resourceVersion },
      spec: { poolRef: { name: "warm" } },
      status: { cocoonSetRef: { name: "warm-a" }, conditions: [{ type: "Ready", status: "True" }] },
    }) as unknown as CocoonClaim;
  const done = { vmID: "vm1", post: succeeded, claim: { name: "c1", ...succeeded } };

  const ok = featureChecker();
  ok.features.checkClaimTurnedReady(claim("c1", "100"), [aPod("warm-a-0", "vm1", "90", done)]);
  // Restored after the claim turned Ready: a new VM whose hooks have not run yet is not judged.
  ok.features.checkClaimTurnedReady(claim("c1", "100"), [aPod("warm-a-0", "vm2", "120", { vmID: "vm2" })]);
  ok.checker.check();
  assert.deepEqual([ok.features.counts.claimPodsJudged, ok.features.counts.claimPodsChangedSince], [1, 1]);

  const early = featureChecker();
  early.features.checkClaimTurnedReady(claim("c1", "100"), [
    aPod("warm-a-0", "vm1", "90", { vmID: "vm1", post: succeeded }),
  ]);
  assert.throws(
    () => early.checker.check(),
    /invariant \(k\).*claim c1 turned Ready .*claim c1's PostClaim phase not run/s,
  );

  const another = featureChecker();
  another.features.checkClaimTurnedReady(claim("c2", "100"), [aPod("warm-a-0", "vm1", "90", done)]);
  assert.throws(() => another.checker.check(), /invariant \(k\).*its record names claim c1/s);

  // At convergence: a Ready claim's set's pod whose record is an earlier VM's.
  const converged = featureChecker();
  converged.features.flagGuest(
    guestFindings({ sets: [], claims: [claim("c1", "100")] }, () => [aPod("warm-a-0", "vm2", "130", done)]),
  );
  assert.throws(
    () => converged.checker.check(),
    /invariant \(k\).*at convergence, claim c1 is Ready.*runs VM vm2, but its guest-hooks record is VM vm1's/s,
  );
});

it("the feature checker flags a Running set naming a guest policy whose VM's post hooks did not succeed (l)", () => {
  const named = aSet("p0", { annotations: { [ANN_GUEST_POLICY]: "fresh" } });
  const failed = { vmID: "vm1", post: { ...succeeded, result: "Failed" } };
  const pods = new Map([
    ["p0", [aPod("p0-0", "vm1", "1", failed)]],
    ["p1", [aPod("p1-0", "vm1", "1")]],
  ]);
  const podsOf = (set: string) => pods.get(set) ?? [];
  // A set naming no policy, or not Running, owes nothing.
  assert.deepEqual(
    guestFindings(
      {
        sets: [
          aSet("p1"),
          aSet("p0", { suspend: true, phase: "Suspended", annotations: { [ANN_GUEST_POLICY]: "fresh" } }),
        ],
        claims: [],
      },
      podsOf,
    ),
    [],
  );
  const found = featureChecker();
  found.features.flagGuest(guestFindings({ sets: [named], claims: [] }, podsOf));
  assert.throws(
    () => found.checker.check(),
    /invariant \(l\).*set p0 \(guest policy fresh\) is Running: pod p0-0's VM vm1 has its post phase Failed/s,
  );
  pods.set("p0", [aPod("p0-0", "vm1", "2", { vmID: "vm1", post: succeeded })]);
  assert.deepEqual(guestFindings({ sets: [named], claims: [] }, podsOf), []);
});
