// config/policy's ValidatingAdmissionPolicy on the real API server: a bad value of any of the
// operator's annotations is refused when it is written, with a message naming the annotation and
// what it takes; good values pass; an object already holding a bad value can still be written
// otherwise (the operator's own patches never stall on it). The binding is the shipped one narrowed
// to this test's namespace, so the other test files sharing the API server are not judged by it.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import { ANN_FROM_CHECKPOINT, ANN_KEEP_CHECKPOINTS } from "../../src/checkpoint/keys.ts";
import {
  ANN_EXPIRE_ACTION,
  ANN_EXPIRE_AT,
  ANN_EXPIRE_DELETE_GRACE,
  ANN_LAST_ACTIVITY,
  ANN_NOTICE_BEFORE,
  ANN_PARKED_AT,
  ANN_SUSPEND_AFTER_IDLE,
} from "../../src/idle/policy.ts";
import { ANN_RELEASE_UNTIL_RESUME } from "../../src/plugin/setstate.ts";
import { apiRequest, createNamespace, testEnv, waitFor } from "../env/testenv.ts";
import { claimsPath, poolsPath } from "../support/poolapi.ts";
import { setsPath } from "../support/setapi.ts";

const env = testEnv();
const ADMISSION = "/apis/admissionregistration.k8s.io/v1";
const ANN_PINNED = "cocoonset.cocoonstack.io/pinned";
// biome-ignore lint/suspicious/noExplicitAny: manifests are arbitrary YAML
type Obj = any;
let ns: string;
let policy: Obj;
let binding: Obj;

function set(name: string, annotations: Record<string, string>): Obj {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, annotations },
    spec: { agent: { image: "ubuntu-dev-base", replicas: 0, mode: "clone" } },
  };
}

const checkpointsPath = () => `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocooncheckpoints`;

async function create(name: string, annotations: Record<string, string>) {
  return apiRequest(env, "POST", setsPath(ns), set(name, annotations));
}

before(async () => {
  ns = await createNamespace(env, "annpolicy");
  const docs = parseAllDocuments(
    readFileSync(resolve(import.meta.dirname, "../../config/policy/annotation-policy.yaml"), "utf8"),
  ).map((d) => d.toJS() as Obj);
  policy = docs.find((d) => d.kind === "ValidatingAdmissionPolicy");
  binding = docs.find((d) => d.kind === "ValidatingAdmissionPolicyBinding");
  // The shipped policy, under a name of this run's own.
  policy.metadata.name = `${ns}.cocoonstack.io`;
  binding.metadata.name = `${ns}.cocoonstack.io`;
  binding.spec.policyName = policy.metadata.name;
  binding.spec.matchResources = { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": ns } } };
  // Written before the policy exists: the bad value an upgrade finds in place.
  const early = await create("before-policy", { [ANN_SUSPEND_AFTER_IDLE]: "soon" });
  assert.equal(early.status, 201, JSON.stringify(early.body));
  for (const [path, obj] of [
    ["validatingadmissionpolicies", policy],
    ["validatingadmissionpolicybindings", binding],
  ] as const) {
    const res = await apiRequest(env, "POST", `${ADMISSION}/${path}`, obj);
    assert.equal(res.status, 201, JSON.stringify(res.body));
  }
  // The API server compiles and starts enforcing a new policy shortly after it is created.
  await waitFor("the policy to refuse a bad value", async () => {
    const res = await create(`probe-${Date.now()}`, { [ANN_EXPIRE_ACTION]: "Explode" });
    return res.status === 422 ? true : undefined;
  });
});

after(async () => {
  await apiRequest(env, "DELETE", `${ADMISSION}/validatingadmissionpolicybindings/${binding.metadata.name}`);
  await apiRequest(env, "DELETE", `${ADMISSION}/validatingadmissionpolicies/${policy.metadata.name}`);
});

function refusal(res: { status: number; body: unknown }): string {
  assert.equal(res.status, 422, JSON.stringify(res.body));
  return (res.body as { message: string }).message;
}

describe("the annotation ValidatingAdmissionPolicy", () => {
  it("refuses each bad value at write time, naming the annotation and what it takes", async () => {
    const cases: [string, string, RegExp][] = [
      [ANN_SUSPEND_AFTER_IDLE, "soon", /suspend-after-idle=soon: want a Go duration above zero/],
      [ANN_SUSPEND_AFTER_IDLE, "0s", /suspend-after-idle=0s: want a Go duration above zero/],
      [ANN_SUSPEND_AFTER_IDLE, "-5m", /suspend-after-idle=-5m/],
      [ANN_LAST_ACTIVITY, "yesterday", /last-activity=yesterday: want an RFC 3339 time/],
      [ANN_EXPIRE_AT, "2026-12-31 18:00", /expire-at=2026-12-31 18:00: want an RFC 3339 time/],
      [ANN_EXPIRE_AT, "2026-02-31T18:00:00Z", /expire-at/],
      [ANN_EXPIRE_ACTION, "delete", /expire-action=delete: want Suspend or Delete/],
      [ANN_PARKED_AT, "now", /parked-at=now/],
      [ANN_NOTICE_BEFORE, "-1m", /notice-before=-1m: want a Go duration of zero or more/],
      [ANN_EXPIRE_DELETE_GRACE, "an hour", /expire-delete-grace=an hour: want a Go duration of zero or more/],
      [ANN_KEEP_CHECKPOINTS, "0", /keep-checkpoints=0: want a whole number/],
      [ANN_FROM_CHECKPOINT, "Not_A_Name", /from-checkpoint=Not_A_Name: want the name of a CocoonCheckpoint/],
      [ANN_RELEASE_UNTIL_RESUME, "always", /release-until-resume=always/],
    ];
    for (const [key, value, message] of cases) {
      const res = await create(`bad-${cases.findIndex((c) => c[1] === value)}`, { [key]: value });
      assert.match(refusal(res), message, `${key}=${value}`);
    }
    const pinned = await apiRequest(env, "POST", checkpointsPath(), {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonCheckpoint",
      metadata: { name: "ck", annotations: { [ANN_PINNED]: "yes" } },
      spec: { cocoonSetRef: { name: "good" } },
    });
    assert.match(refusal(pinned), /pinned=yes: want true or false/);
  });

  it("admits good values, and refuses a patch that makes one bad", async () => {
    const res = await create("good", {
      [ANN_SUSPEND_AFTER_IDLE]: "1h30m",
      [ANN_LAST_ACTIVITY]: "2026-12-01T09:33:47Z",
      [ANN_EXPIRE_AT]: "2026-12-31T18:00:00.5+02:00",
      [ANN_EXPIRE_ACTION]: "Delete",
      [ANN_PARKED_AT]: "2026-12-01T09:33:47.123456789Z",
      [ANN_NOTICE_BEFORE]: "0s",
      [ANN_EXPIRE_DELETE_GRACE]: "90m",
      [ANN_KEEP_CHECKPOINTS]: "3",
      [ANN_FROM_CHECKPOINT]: "before-eval",
      [ANN_RELEASE_UNTIL_RESUME]: "",
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const patched = await apiRequest(
      env,
      "PATCH",
      `${setsPath(ns)}/good`,
      { metadata: { annotations: { [ANN_SUSPEND_AFTER_IDLE]: "1.5q" } } },
      "application/merge-patch+json",
    );
    assert.match(refusal(patched), /suspend-after-idle=1.5q/);
  });

  it("lets an object holding a bad value from before the policy be written otherwise", async () => {
    const res = await apiRequest(
      env,
      "PATCH",
      `${setsPath(ns)}/before-policy`,
      { metadata: { finalizers: ["cocoonset.cocoonstack.io/finalizer"] }, spec: { suspend: true } },
      "application/merge-patch+json",
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const changed = await apiRequest(
      env,
      "PATCH",
      `${setsPath(ns)}/before-policy`,
      { metadata: { annotations: { [ANN_SUSPEND_AFTER_IDLE]: "later" } } },
      "application/merge-patch+json",
    );
    assert.match(refusal(changed), /suspend-after-idle=later/);
    await apiRequest(
      env,
      "PATCH",
      `${setsPath(ns)}/before-policy`,
      { metadata: { finalizers: null } },
      "application/merge-patch+json",
    );
  });

  it("judges a CocoonPool template's annotations and a CocoonClaim's as a set's", async () => {
    const pool = (name: string, annotations: Record<string, string>) =>
      apiRequest(env, "POST", poolsPath(ns), {
        apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
        kind: "CocoonPool",
        metadata: { name },
        spec: { replicas: 0, template: { metadata: { annotations }, spec: set("t", {}).spec } },
      });
    assert.match(
      refusal(await pool("bad-template", { [ANN_EXPIRE_ACTION]: "Explode" })),
      /expire-action=Explode/,
    );
    const good = await pool("good-template", { [ANN_SUSPEND_AFTER_IDLE]: "30m" });
    assert.equal(good.status, 201, JSON.stringify(good.body));
    const claim = (name: string, annotations: Record<string, string>) =>
      apiRequest(env, "POST", claimsPath(ns), {
        apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
        kind: "CocoonClaim",
        metadata: { name, annotations },
        spec: { poolRef: { name: "good-template" } },
      });
    assert.match(
      refusal(await claim("bad-claim", { [ANN_SUSPEND_AFTER_IDLE]: "soon" })),
      /suspend-after-idle=soon/,
    );
    const bound = await claim("good-claim", { [ANN_SUSPEND_AFTER_IDLE]: "1h" });
    assert.equal(bound.status, 201, JSON.stringify(bound.body));
  });
});
