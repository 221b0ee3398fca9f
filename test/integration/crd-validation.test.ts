// Our CRDs on the real kube-apiserver: every case of test/fixtures/cel-cases.ts is admitted or
// rejected with its message, every CocoonSet sample users apply is accepted, and the guest policy
// sample is accepted as written, the schema adding no field the operator defaults itself.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import { type ApiResponse, apiRequest, createNamespace, type TestEnvInfo, testEnv } from "../env/testenv.ts";
import { type CelCase, celCases } from "../fixtures/cel-cases.ts";
import { referenceSamplesDir } from "../support/shared.ts";

const repoRoot = join(import.meta.dirname, "..", "..");

const samplesDir = referenceSamplesDir;

const RESOURCES: Record<CelCase["kind"], string> = {
  CocoonSet: "v1/cocoonsets",
  CocoonHibernation: "v1/cocoonhibernations",
  CocoonGuestPolicy: "v1alpha1/cocoonguestpolicies",
  CocoonClaim: "v1alpha1/cocoonclaims",
};

function collectionPath(ns: string, kind: CelCase["kind"]): string {
  const [version, plural] = RESOURCES[kind].split("/");
  return `/apis/cocoonset.cocoonstack.io/${version}/namespaces/${ns}/${plural}`;
}

function inNamespace(object: unknown, ns: string): { metadata: { name: string; namespace: string } } {
  const copy = structuredClone(object) as { metadata: { name: string; namespace: string } };
  copy.metadata.namespace = ns;
  return copy;
}

function describeResponse(res: ApiResponse): string {
  return `${res.status} ${typeof res.body === "string" ? res.body : (res.body?.message ?? "")}`;
}

describe("CRD validation on the real API server", () => {
  let env: TestEnvInfo;
  let ns: string;

  before(async () => {
    env = testEnv();
    ns = await createNamespace(env, "crd-validation");
  });

  for (const c of celCases) {
    it(`${c.valid ? "admits" : "rejects"} ${c.name}`, async () => {
      const path = collectionPath(ns, c.kind);
      const object = inNamespace(c.object, ns);
      let res: ApiResponse;
      if (c.update) {
        const from = inNamespace(c.update.from, ns);
        from.metadata.name = object.metadata.name;
        const created = await apiRequest(env, "POST", path, from);
        assert.equal(created.status, 201, `creating the original: ${describeResponse(created)}`);
        const current = created.body as { metadata: { resourceVersion: string } };
        const replacement = inNamespace(c.object, ns) as { metadata: Record<string, unknown> };
        replacement.metadata.resourceVersion = current.metadata.resourceVersion;
        res = await apiRequest(env, "PUT", `${path}/${object.metadata.name}`, replacement);
      } else {
        res = await apiRequest(env, "POST", path, object);
      }
      if (c.valid) {
        assert.ok(res.status === 200 || res.status === 201, `expected admission: ${describeResponse(res)}`);
      } else {
        assert.equal(res.status, 422, `expected 422 Invalid: ${describeResponse(res)}`);
        assert.ok(
          String(res.body?.message).includes(c.message ?? ""),
          `expected message containing ${JSON.stringify(c.message)}, got ${JSON.stringify(res.body?.message)}`,
        );
      }
    });
  }

  for (const file of readdirSync(samplesDir).filter((f) => f.endsWith(".yaml"))) {
    for (const doc of parseAllDocuments(readFileSync(join(samplesDir, file), "utf8"))) {
      const object = doc.toJS() as { kind?: string; metadata: { name: string } };
      if (object.kind !== "CocoonSet") continue;
      it(`accepts the sample ${file} (${object.metadata.name})`, async () => {
        const res = await apiRequest(env, "POST", collectionPath(ns, "CocoonSet"), inNamespace(object, ns));
        assert.equal(res.status, 201, describeResponse(res));
        const created = res.body as { spec: { snapshotPolicy: string; hibernatePolicy: string } };
        assert.equal(created.spec.snapshotPolicy, "always");
        assert.equal(created.spec.hibernatePolicy, "retain", "the CRD default applies");
      });
    }
  }

  it("accepts config/samples/guest-policy.yaml as written: every default stays the operator's", async () => {
    const sample = parseAllDocuments(
      readFileSync(join(repoRoot, "config", "samples", "guest-policy.yaml"), "utf8"),
    ).map((d) => d.toJS());
    assert.equal(sample.length, 1);
    const res = await apiRequest(
      env,
      "POST",
      collectionPath(ns, "CocoonGuestPolicy"),
      inNamespace(sample[0], ns),
    );
    assert.equal(res.status, 201, describeResponse(res));
    const created = res.body as { spec: unknown; status?: unknown };
    assert.deepEqual(created.spec, sample[0].spec);
    const bare = {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonGuestPolicy",
      metadata: { name: "bare" },
      spec: { hooks: [{ name: "h", on: ["PostClone"], exec: { command: ["true"] } }] },
    };
    const bareRes = await apiRequest(
      env,
      "POST",
      collectionPath(ns, "CocoonGuestPolicy"),
      inNamespace(bare, ns),
    );
    assert.equal(bareRes.status, 201, describeResponse(bareRes));
    assert.deepEqual((bareRes.body as { spec: unknown }).spec, bare.spec, "no field was defaulted");
  });
});
