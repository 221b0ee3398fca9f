// config/policy/bookkeeping-policy.yaml on the real API server: a tenant (a service account with every
// right in its namespace) can neither add, change nor remove one of the operator's bookkeeping keys on
// a CocoonSet or a CocoonClaim, nor put one in a CocoonPool's template, nor the guest hooks record on a
// pod (through the pod or its status); the operator's service account can; other pod annotations stay
// the tenant's; an admin overrides only by acting as that account (kubectl --as), explicitly. The
// bindings are the shipped ones narrowed to this test's namespace, so the other test files' operators
// (which run as the API server's admin) are not judged by them.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import { ANN_DELETE_VM_NAMES, ANN_HIBERNATE_RECLAIM } from "../../src/contract/keys.ts";
import { ANN_GUEST_HOOKS } from "../../src/guest/keys.ts";
import { BOOKKEEPING_KEYS } from "../../src/pool/bookkeeping.ts";
import { controlPlaneBinDir } from "../env/controlplane.ts";
import { type ApiConnection, apiRequest, createNamespace, testEnv, waitFor } from "../env/testenv.ts";
import { claimsPath, poolsPath } from "../support/poolapi.ts";
import { serviceAccountToken } from "../support/serviceaccount.ts";
import { setsPath } from "../support/setapi.ts";

const env = testEnv();
const ADMISSION = "/apis/admissionregistration.k8s.io/v1";
const OPERATOR_NS = "cocoon-system";
const OPERATOR_SA = "cocoon-operator";
const OPERATOR_USER = `system:serviceaccount:${OPERATOR_NS}:${OPERATOR_SA}`;
const REFUSED = /only the cocoon-operator service account writes/;
// biome-ignore lint/suspicious/noExplicitAny: manifests are arbitrary YAML
type Obj = any;
let ns: string;
let policies: Obj[];
let bindings: Obj[];
let tenant: ApiConnection;
let operator: ApiConnection;

function set(
  name: string,
  annotations: Record<string, string> = {},
  labels: Record<string, string> = {},
): Obj {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, annotations, labels },
    spec: { agent: { image: "ubuntu-dev-base", replicas: 0, mode: "clone" } },
  };
}

function claim(name: string, annotations: Record<string, string>, labels: Record<string, string> = {}): Obj {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonClaim",
    metadata: { name, annotations, labels },
    spec: { poolRef: { name: "warm" } },
  };
}

function pool(name: string, annotations: Record<string, string>, labels: Record<string, string> = {}): Obj {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonPool",
    metadata: { name },
    spec: {
      replicas: 0,
      template: {
        metadata: { annotations, labels },
        spec: { agent: { image: "ubuntu-dev-base", replicas: 0, mode: "clone" } },
      },
    },
  };
}

const podsPath = (namespace: string) => `/api/v1/namespaces/${namespace}/pods`;

/** A pod as far as admission cares: no node runs it. */
function pod(name: string, annotations: Record<string, string> = {}): Obj {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, annotations },
    spec: { containers: [{ name: "agent", image: "ubuntu-dev-base" }] },
  };
}

/** A guest hooks record as a tenant would forge it: every phase Succeeded. */
const RECORD = JSON.stringify({
  vmID: "vm-1",
  origin: "clone",
  post: { result: "Succeeded", at: "2025-01-01T00:00:00Z", policyGeneration: 1 },
});

/** Whether `key` is one of the pool's and claim's labels rather than an annotation. */
const isLabel = (key: string) =>
  [
    "cocoonset.cocoonstack.io/claim",
    "cocoonset.cocoonstack.io/claimed-from",
    "cocoonset.cocoonstack.io/pool",
  ].includes(key);

/** `key=value` as the operator writes it: a label or an annotation. */
function carrying(key: string, value: string): [Record<string, string>, Record<string, string>] {
  return isLabel(key) ? [{}, { [key]: value }] : [{ [key]: value }, {}];
}

const labelValue = "owner-a";

async function ensure(path: string, obj: Obj): Promise<void> {
  const res = await apiRequest(env, "POST", path, obj);
  assert.ok(
    res.status === 201 || res.status === 409,
    `POST ${path}: ${res.status} ${JSON.stringify(res.body)}`,
  );
}

/** A service account with every right in this test's namespace, and a connection as it. */
async function accountIn(namespace: string, name: string): Promise<ApiConnection> {
  await ensure(`/api/v1/namespaces/${namespace}/serviceaccounts`, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name },
  });
  await ensure(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: `${namespace}-${name}` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
    subjects: [{ kind: "ServiceAccount", name, namespace }],
  });
  return { ...env, token: await serviceAccountToken(env, namespace, name, 600) };
}

function refusal(res: { status: number; body: Obj }): string {
  assert.ok(res.status === 403 || res.status === 422, `${res.status} ${JSON.stringify(res.body)}`);
  return res.body.message as string;
}

function created(res: { status: number; body: Obj }): void {
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

const patchMeta = (conn: ApiConnection, path: string, metadata: Obj) =>
  apiRequest(conn, "PATCH", path, { metadata }, "application/merge-patch+json");

before(async () => {
  ns = await createNamespace(env, "bookkeeping");
  await ensure("/api/v1/namespaces", {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: OPERATOR_NS },
  });
  tenant = await accountIn(ns, "tenant");
  operator = await accountIn(OPERATOR_NS, OPERATOR_SA);
  const docs = parseAllDocuments(
    readFileSync(resolve(import.meta.dirname, "../../config/policy/bookkeeping-policy.yaml"), "utf8"),
  ).map((d) => d.toJS() as Obj);
  policies = docs.filter((d) => d.kind === "ValidatingAdmissionPolicy");
  bindings = docs.filter((d) => d.kind === "ValidatingAdmissionPolicyBinding");
  assert.equal(policies.length, 2, "one policy for the operator's kinds, one for pods");
  // The shipped policies, under names of this run's own.
  for (const policy of policies) policy.metadata.name = `${ns}.${policy.metadata.name}`;
  for (const binding of bindings) {
    binding.metadata.name = `${ns}.${binding.metadata.name}`;
    binding.spec.policyName = `${ns}.${binding.spec.policyName}`;
    binding.spec.matchResources = {
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns } },
    };
  }
  // Written by the operator before the policy exists, as an upgrade finds it.
  created(
    await apiRequest(
      operator,
      "POST",
      setsPath(ns),
      set("kept", { [ANN_DELETE_VM_NAMES]: `vk-${ns}-kept-0` }),
    ),
  );
  created(await apiRequest(operator, "POST", podsPath(ns), pod("recorded", { [ANN_GUEST_HOOKS]: RECORD })));
  for (const policy of policies) {
    created(await apiRequest(env, "POST", `${ADMISSION}/validatingadmissionpolicies`, policy));
  }
  for (const binding of bindings) {
    created(await apiRequest(env, "POST", `${ADMISSION}/validatingadmissionpolicybindings`, binding));
  }
  await waitFor("the policies to refuse a tenant's bookkeeping keys", async () => {
    const probe = `probe-${Date.now()}`;
    const onSet = await apiRequest(tenant, "POST", setsPath(ns), set(probe, { [ANN_DELETE_VM_NAMES]: "x" }));
    const onPod = await apiRequest(tenant, "POST", podsPath(ns), pod(probe, { [ANN_GUEST_HOOKS]: RECORD }));
    return [onSet, onPod].every((res) => res.status === 403 || res.status === 422) ? true : undefined;
  });
});

after(async () => {
  for (const binding of bindings ?? []) {
    await apiRequest(
      env,
      "DELETE",
      `${ADMISSION}/validatingadmissionpolicybindings/${binding.metadata.name}`,
    );
  }
  for (const policy of policies ?? []) {
    await apiRequest(env, "DELETE", `${ADMISSION}/validatingadmissionpolicies/${policy.metadata.name}`);
  }
});

describe("the bookkeeping ValidatingAdmissionPolicy", () => {
  it("refuses a tenant each bookkeeping key on a new CocoonSet, naming it; the operator's account may write it", async () => {
    for (const [i, key] of BOOKKEEPING_KEYS.entries()) {
      const [annotations, labels] = carrying(key, isLabel(key) ? labelValue : `vk-b-prod-0`);
      const res = await apiRequest(tenant, "POST", setsPath(ns), set(`tenant-${i}`, annotations, labels));
      const message = refusal(res);
      assert.match(message, REFUSED, key);
      assert.ok(message.includes(key), `${key}: ${message}`);
      created(await apiRequest(operator, "POST", setsPath(ns), set(`operator-${i}`, annotations, labels)));
    }
  });

  it("refuses a tenant adding, changing or removing a key on an existing set, and lets other edits through", async () => {
    const path = `${setsPath(ns)}/kept`;
    assert.match(
      refusal(
        await patchMeta(tenant, path, {
          annotations: { [ANN_DELETE_VM_NAMES]: `vk-${ns}-kept-0,vk-b-prod-0` },
        }),
      ),
      REFUSED,
    );
    assert.match(
      refusal(await patchMeta(tenant, path, { annotations: { [ANN_DELETE_VM_NAMES]: null } })),
      REFUSED,
    );
    assert.match(
      refusal(
        await patchMeta(tenant, path, {
          annotations: { [ANN_HIBERNATE_RECLAIM]: '{"generation":1,"vms":["vk-b-prod-0"]}' },
        }),
      ),
      REFUSED,
    );
    assert.match(
      refusal(await patchMeta(tenant, path, { labels: { "cocoonset.cocoonstack.io/claim": "mine" } })),
      REFUSED,
    );
    // The set already holds a key: a write that leaves it alone passes.
    const other = await patchMeta(tenant, path, { annotations: { note: "edited by the tenant" } });
    assert.equal(other.status, 200, JSON.stringify(other.body));
    const byOperator = await patchMeta(operator, path, { annotations: { [ANN_DELETE_VM_NAMES]: null } });
    assert.equal(byOperator.status, 200, JSON.stringify(byOperator.body));
  });

  it("refuses a tenant's bookkeeping keys on a CocoonClaim, and the operator's account may write them", async () => {
    for (const key of [
      ANN_HIBERNATE_RECLAIM,
      "cocoonset.cocoonstack.io/claim",
      "cocoonset.cocoonstack.io/restore",
    ]) {
      const [annotations, labels] = carrying(key, labelValue);
      const name = `c-${BOOKKEEPING_KEYS.indexOf(key)}`;
      assert.match(
        refusal(await apiRequest(tenant, "POST", claimsPath(ns), claim(name, annotations, labels))),
        REFUSED,
      );
      created(await apiRequest(operator, "POST", claimsPath(ns), claim(name, annotations, labels)));
    }
  });

  it("refuses a CocoonPool whose template carries a bookkeeping key, annotation or label", async () => {
    const reclaim = await apiRequest(
      tenant,
      "POST",
      poolsPath(ns),
      pool("copied", { [ANN_HIBERNATE_RECLAIM]: '{"generation":1,"vms":["vk-b-prod-0"]}' }),
    );
    assert.match(
      refusal(reclaim),
      /spec\.template\.metadata: cocoonset\.cocoonstack\.io\/hibernate-reclaim: .*pool template/,
    );
    const labelled = await apiRequest(
      tenant,
      "POST",
      poolsPath(ns),
      pool("labelled", {}, { "cocoonset.cocoonstack.io/claim": "x" }),
    );
    assert.match(refusal(labelled), /spec\.template\.metadata: cocoonset\.cocoonstack\.io\/claim/);
    created(await apiRequest(tenant, "POST", poolsPath(ns), pool("plain", { note: "x" }, { team: "a" })));
  });

  it("refuses a tenant the guest hooks record on a new pod, naming it; the operator's account may write it", async () => {
    const message = refusal(
      await apiRequest(tenant, "POST", podsPath(ns), pod("forged", { [ANN_GUEST_HOOKS]: RECORD })),
    );
    assert.match(message, REFUSED);
    assert.ok(message.includes(ANN_GUEST_HOOKS), message);
    created(
      await apiRequest(operator, "POST", podsPath(ns), pod("by-operator", { [ANN_GUEST_HOOKS]: RECORD })),
    );
    created(await apiRequest(tenant, "POST", podsPath(ns), pod("plain", { note: "the tenant's" })));
  });

  it("refuses a tenant adding, changing or removing the record on a pod or its status, and lets other annotations through", async () => {
    const path = `${podsPath(ns)}/recorded`;
    const failed = JSON.stringify({ ...JSON.parse(RECORD), post: { result: "Failed" } });
    for (const target of [path, `${path}/status`]) {
      assert.match(
        refusal(await patchMeta(tenant, target, { annotations: { [ANN_GUEST_HOOKS]: failed } })),
        REFUSED,
      );
      assert.match(
        refusal(await patchMeta(tenant, target, { annotations: { [ANN_GUEST_HOOKS]: null } })),
        REFUSED,
      );
    }
    const plain = `${podsPath(ns)}/plain`;
    for (const target of [plain, `${plain}/status`]) {
      assert.match(
        refusal(await patchMeta(tenant, target, { annotations: { [ANN_GUEST_HOOKS]: RECORD } })),
        REFUSED,
      );
    }
    // The pod already holds a record: other annotations are the tenant's to write.
    const other = await patchMeta(tenant, path, { annotations: { note: "edited by the tenant" } });
    assert.equal(other.status, 200, JSON.stringify(other.body));
    assert.equal(other.body.metadata.annotations[ANN_GUEST_HOOKS], RECORD);
    // A status write changes annotations too: that is why the policy judges pods/status.
    const byOperator = await patchMeta(operator, `${path}/status`, {
      annotations: { [ANN_GUEST_HOOKS]: failed },
    });
    assert.equal(byOperator.status, 200, JSON.stringify(byOperator.body));
    assert.equal(byOperator.body.metadata.annotations[ANN_GUEST_HOOKS], failed);
    const removed = await patchMeta(operator, path, { annotations: { [ANN_GUEST_HOOKS]: null } });
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    assert.equal(removed.body.metadata.annotations?.[ANN_GUEST_HOOKS], undefined);
  });

  it("refuses the admin too, who overrides only by acting as the operator's account (kubectl --as)", async () => {
    created(await apiRequest(env, "POST", setsPath(ns), set("by-admin")));
    const path = `${setsPath(ns)}/by-admin`;
    assert.match(
      refusal(await patchMeta(env, path, { annotations: { [ANN_DELETE_VM_NAMES]: "x" } })),
      REFUSED,
    );
    const kubectl = join(controlPlaneBinDir(), "kubectl");
    execFileSync(kubectl, [
      "--kubeconfig",
      env.kubeconfigPath,
      `--as=${OPERATOR_USER}`,
      "-n",
      ns,
      "annotate",
      "cocoonsets.cocoonset.cocoonstack.io/by-admin",
      `${ANN_DELETE_VM_NAMES}=vk-${ns}-by-admin-0`,
    ]);
    const res = await apiRequest(env, "GET", path);
    assert.equal(res.body.metadata.annotations[ANN_DELETE_VM_NAMES], `vk-${ns}-by-admin-0`);
  });
});
