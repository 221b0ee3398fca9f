// Pools and claims that cannot move say why (docs/pools.md), on the real API server: a ResourceQuota on
// CocoonSets refuses the member creates beyond it, and the pool's Ready condition turns False with
// reason MemberCreateRefused and the API server's answer, with a Warning event; the project's own
// annotation policy refuses the bind of a claim whose expire-at is not a time, and the claim waits
// Pending with reason BindRefused and the policy's message, with a Warning event. Neither is a pass
// that fails with no reason.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import { ANN_EXPIRE_AT } from "../../src/idle/policy.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { claimsPath, createPool, getClaim, getPool } from "../support/poolapi.ts";
import { objectEvents } from "../support/setapi.ts";
import { E2E_IMAGE, type SetEnv, startSetEnv } from "../support/setwait.ts";

const env = testEnv();
let ns: string;
let nodePool: string;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "prefuse");
  ({ ns, pool: nodePool } = e2e);
});

const ADMISSION = "/apis/admissionregistration.k8s.io/v1";
// biome-ignore lint/suspicious/noExplicitAny: manifests are arbitrary YAML
type Manifest = any;
const installed: string[] = [];

after(async () => {
  for (const path of installed.reverse()) await apiRequest(env, "DELETE", path);
  await e2e?.stop();
});

/** config/policy's annotation policy, bound to this test's namespace only. */
async function installAnnotationPolicy(): Promise<void> {
  const docs = parseAllDocuments(
    readFileSync(resolve(import.meta.dirname, "../../config/policy/annotation-policy.yaml"), "utf8"),
  ).map((d) => d.toJS() as Manifest);
  const policy = docs.find((d) => d.kind === "ValidatingAdmissionPolicy");
  const binding = docs.find((d) => d.kind === "ValidatingAdmissionPolicyBinding");
  policy.metadata.name = `${ns}.cocoonstack.io`;
  binding.metadata.name = `${ns}.cocoonstack.io`;
  binding.spec.policyName = policy.metadata.name;
  binding.spec.matchResources = { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns } } };
  for (const [path, obj] of [
    ["validatingadmissionpolicies", policy],
    ["validatingadmissionpolicybindings", binding],
  ] as const) {
    const res = await apiRequest(env, "POST", `${ADMISSION}/${path}`, obj);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    installed.push(`${ADMISSION}/${path}/${obj.metadata.name}`);
  }
}

const SETS_COUNT = "count/cocoonsets.cocoonset.cocoonstack.io";

describe("a pool whose member creates a ResourceQuota refuses", () => {
  it("turns Ready False with MemberCreateRefused and the server's answer, and records a Warning", {
    timeout: 120_000,
  }, async () => {
    const quotas = `/api/v1/namespaces/${ns}/resourcequotas`;
    const created = await apiRequest(env, "POST", quotas, {
      apiVersion: "v1",
      kind: "ResourceQuota",
      metadata: { name: "sets", namespace: ns },
      spec: { hard: { [SETS_COUNT]: "1" } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    // No quota controller runs here: the test writes the usage it would have observed.
    const observed = await apiRequest(
      env,
      "PATCH",
      `${quotas}/sets/status`,
      { status: { hard: { [SETS_COUNT]: "1" }, used: { [SETS_COUNT]: "0" } } },
      "application/merge-patch+json",
    );
    assert.equal(observed.status, 200, JSON.stringify(observed.body));

    await createPool(env, ns, "capped", {
      replicas: 2,
      warmth: "Running",
      template: { spec: { nodePool, agent: { image: E2E_IMAGE, replicas: 0, mode: "clone" } } },
    });
    const ready = await waitFor(
      "the pool saying why it cannot fill",
      async () => {
        const pool = await getPool(env, ns, "capped");
        const condition = pool.status?.conditions?.find((c) => c.type === "Ready");
        return condition?.reason === "MemberCreateRefused" ? condition : undefined;
      },
      60_000,
    );
    assert.equal(ready.status, "False");
    assert.match(ready.message, /the API server refused to create a member CocoonSet: .*exceeded quota/);
    const events = await objectEvents(env, ns, "capped");
    const warning = events.find((e) => e.reason === "MemberCreateRefused");
    assert.ok(warning, JSON.stringify(events));
    assert.equal(warning.type, "Warning");
    // The namespace is shared with the next test, which needs room for its member.
    assert.equal((await apiRequest(env, "DELETE", `${quotas}/sets`)).status, 200);
  });
});

describe("a claim whose bind the annotation policy refuses", () => {
  it("waits Pending with BindRefused and the policy's message, and records a Warning", {
    timeout: 120_000,
  }, async () => {
    // Created before the policy: the policy judges the bind, which carries the value onto the set.
    const claim = await apiRequest(env, "POST", claimsPath(ns), {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonClaim",
      metadata: { name: "late", namespace: ns, annotations: { [ANN_EXPIRE_AT]: "2026-12-31 18:00" } },
      spec: { poolRef: { name: "open" } },
    });
    assert.equal(claim.status, 201, JSON.stringify(claim.body));
    await installAnnotationPolicy();
    await waitFor("the policy enforced", async () => {
      const probe = await createSetWithBadExpiry(`probe-${Date.now()}`);
      return probe === 422 ? true : undefined;
    });
    await createPool(env, ns, "open", {
      replicas: 1,
      warmth: "Running",
      template: { spec: { nodePool, agent: { image: E2E_IMAGE, replicas: 0, mode: "clone" } } },
    });
    const refused = await waitFor(
      "the claim saying why it cannot bind",
      async () => {
        const got = await getClaim(env, ns, "late");
        return got?.status?.reason === "BindRefused" ? got : undefined;
      },
      90_000,
    );
    assert.equal(refused.status?.phase, "Pending");
    assert.match(
      refused.status?.message ?? "",
      /the API server refused the bind of CocoonSet open-.*expire-at=2026-12-31 18:00/,
    );
    const events = await objectEvents(env, ns, "late");
    assert.equal(events.find((e) => e.reason === "BindRefused")?.type, "Warning", JSON.stringify(events));
  });
});

/** Creates a set with a bad expire-at: the HTTP status the API server answers. */
async function createSetWithBadExpiry(name: string): Promise<number> {
  const res = await apiRequest(env, "POST", `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets`, {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, annotations: { [ANN_EXPIRE_AT]: "2026-12-31 18:00" } },
    spec: { agent: { image: E2E_IMAGE, replicas: 0, mode: "clone" } },
  });
  if (res.status === 201)
    await apiRequest(env, "DELETE", `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets/${name}`);
  return res.status;
}
