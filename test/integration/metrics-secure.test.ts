// --metrics-secure on the real API server: /metrics is HTTPS only, and answers a caller only when the
// API server authenticates its token (TokenReview) and lets its user get the /metrics non-resource URL
// (SubjectAccessReview): no token 401, a token whose user lacks the grant 403, with the
// metrics-secure component's metrics-reader ClusterRole bound 200 with the metrics.

import assert from "node:assert/strict";
import type { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { type RequestOptions, request } from "node:https";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import type { TLSSocket } from "node:tls";
import { parse } from "yaml";
import { selfSignedCertificate } from "../env/certs.ts";
import { apiRequest, createNamespace, testEnv } from "../env/testenv.ts";
import { startTestOperator, type TestOperator } from "../support/operator.ts";
import { serviceAccountToken } from "../support/serviceaccount.ts";

const repoRoot = resolve(import.meta.dirname, "../..");
const env = testEnv();

interface Scrape {
  status: number;
  body: string;
  peer: X509Certificate | undefined;
}

function scrape(port: number, token?: string): Promise<Scrape> {
  const opts: RequestOptions = {
    host: "127.0.0.1",
    port,
    path: "/metrics",
    rejectUnauthorized: false,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  };
  return new Promise((done, fail) => {
    const req = request(opts, (res) => {
      const raw = (res.socket as TLSSocket).getPeerX509Certificate();
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        done({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), peer: raw }),
      );
    });
    req.on("error", fail);
    req.end();
  });
}

async function created(path: string, body: unknown): Promise<void> {
  const res = await apiRequest(env, "POST", path, body);
  assert.ok(
    res.status === 201 || res.status === 409,
    `POST ${path}: ${res.status} ${JSON.stringify(res.body)}`,
  );
}

/** A service account and a token for it. */
async function newServiceAccountToken(namespace: string, name: string): Promise<string> {
  await created(`/api/v1/namespaces/${namespace}/serviceaccounts`, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name },
  });
  return serviceAccountToken(env, namespace, name, 600);
}

describe("secure metrics on the real API server", () => {
  let operator: TestOperator;
  let port: number;
  let reader: string;
  let stranger: string;

  before(async () => {
    const namespace = await createNamespace(env, "metrics-secure");
    const role = parse(
      readFileSync(resolve(repoRoot, "config/components/metrics-secure/metrics-reader-role.yaml"), "utf8"),
    );
    await created("/apis/rbac.authorization.k8s.io/v1/clusterroles", role);
    reader = await newServiceAccountToken(namespace, "scraper");
    stranger = await newServiceAccountToken(namespace, "stranger");
    await created("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: `${namespace}-scraper` },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role.metadata.name },
      subjects: [{ kind: "ServiceAccount", name: "scraper", namespace }],
    });
    operator = await startTestOperator({
      namespace,
      metricsAddr: "127.0.0.1:0",
      metricsSecure: "self-signed",
    });
    port = operator.operator.manager.ports().metrics ?? 0;
  });

  after(() => operator?.stop());

  it("a request without a token is 401, and the server presents its self-signed localhost certificate", async () => {
    const res = await scrape(port);
    assert.equal(res.status, 401);
    assert.ok(res.peer, "a TLS peer certificate");
    assert.equal(res.peer.subject, "CN=localhost");
    assert.equal(res.peer.issuer, "CN=localhost");
    assert.match(res.peer.subjectAltName ?? "", /DNS:localhost/);
    assert.match(res.peer.subjectAltName ?? "", /IP Address:127\.0\.0\.1/);
    assert.ok(res.peer.verify(res.peer.publicKey), "signed by its own key");
  });

  it("a token the API server does not know is 401", async () => {
    assert.equal((await scrape(port, "not-a-real-token")).status, 401);
  });

  it("a valid token whose user may not get /metrics is 403", async () => {
    const res = await scrape(port, stranger);
    assert.equal(res.status, 403);
    assert.doesNotMatch(res.body, /controller_runtime/);
  });

  it("a token bound to the metrics-reader role gets the metrics", async () => {
    const res = await scrape(port, reader);
    assert.equal(res.status, 200);
    assert.match(res.body, /^# HELP controller_runtime_reconcile_total/m);
  });

  it("plain HTTP is not served", async () => {
    const outcome = await new Promise<string>((done) => {
      const req = httpRequest({ host: "127.0.0.1", port, path: "/metrics" }, (res) => {
        res.resume();
        done(`status ${res.statusCode}`);
      });
      req.on("error", (err) => done(err.message));
      req.end();
    });
    assert.doesNotMatch(outcome, /^status 200/);
  });
});

describe("secure metrics with a certificate from files", () => {
  it("serves the certificate named by --metrics-cert-path instead of a self-signed one", async () => {
    const namespace = await createNamespace(env, "metrics-cert");
    const dir = mkdtempSync(join(tmpdir(), "metrics-cert-"));
    const files = selfSignedCertificate(dir, "tls", {
      subject: "/CN=cocoon-operator-metrics.cocoon-system.svc",
    });
    const operator = await startTestOperator({
      namespace,
      metricsAddr: "127.0.0.1:0",
      metricsSecure: files,
    });
    try {
      const res = await scrape(operator.operator.manager.ports().metrics ?? 0);
      assert.equal(res.status, 401);
      assert.equal(res.peer?.subject, "CN=cocoon-operator-metrics.cocoon-system.svc");
    } finally {
      await operator.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
