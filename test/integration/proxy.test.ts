// HTTP proxies and trust roots as the Go operator has them, through a real forward proxy (tinyproxy
// on loopback). The API client: a kubeconfig proxy-url carries every request (loopback included,
// as client-go's http.ProxyURL); HTTPS_PROXY carries requests to a non-loopback server unless
// NO_PROXY names it, and never requests to a loopback one (Go's http.ProxyFromEnvironment). The
// registry client: HTTPS_PROXY per request, and TLS trusting SSL_CERT_FILE / SSL_CERT_DIR as Go's
// system roots.
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { KubeClient, kubeConfigFromFile } from "../../src/controller/client.ts";
import { PODS } from "../../src/controller/resources.ts";
import { proxyFromEnvironment } from "../../src/net/proxy.ts";
import { createRegistryClient } from "../../src/registry/index.ts";
import { createTransport } from "../../src/registry/transport.ts";
import { testEnv } from "../env/testenv.ts";
import {
  createTestCA,
  externalIPv4,
  type Forwarder,
  startForwarder,
  startTinyproxy,
  type TestCA,
  type Tinyproxy,
} from "../support/proxyenv.ts";

const env = testEnv();
let proxy: Tinyproxy;
let dir: string;
let ip: string;

/** The request lines the proxy logged while fn ran. */
async function proxiedDuring(fn: () => Promise<unknown>): Promise<string[]> {
  const before = proxy.requests().length;
  await fn();
  return proxy.requests().slice(before);
}

/** A kubeconfig for the test API server at server, with extra cluster fields. */
function kubeconfig(name: string, server: string, cluster: Record<string, string> = {}): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: "c",
          cluster: {
            server,
            "certificate-authority-data": readFileSync(env.caFile).toString("base64"),
            ...cluster,
          },
        },
      ],
      users: [{ name: "u", user: { token: env.token } }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    }),
  );
  return path;
}

/** One authenticated API call (a pod list), then the client's connections close. */
async function listPods(client: KubeClient): Promise<void> {
  try {
    const list = await client.list(PODS, "default");
    assert.ok(list.resourceVersion);
  } finally {
    client.close();
  }
}

before(async () => {
  proxy = await startTinyproxy();
  dir = mkdtempSync(join(tmpdir(), "cocoon-proxytest-"));
  ip = externalIPv4();
});

after(async () => {
  await proxy.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("API server client and proxies", () => {
  const apiserver = new URL(env.server);
  let forwarder: Forwarder;
  let external: string;

  before(async () => {
    forwarder = await startForwarder(ip, { host: "127.0.0.1", port: Number(apiserver.port) });
    external = kubeconfig("external", `https://${forwarder.address}`, { "tls-server-name": "kubernetes" });
  });

  after(() => forwarder.stop());

  it("a kubeconfig proxy-url carries every request, even to a loopback server", async () => {
    const path = kubeconfig("proxy-url", env.server, { "proxy-url": proxy.url });
    const requests = await proxiedDuring(() =>
      listPods(new KubeClient({ ...kubeConfigFromFile(path), env: {} })),
    );
    assert.deepEqual(requests, [`CONNECT ${apiserver.host} HTTP/1.1`]);
  });

  it("HTTPS_PROXY carries requests to a non-loopback server", async () => {
    const requests = await proxiedDuring(() =>
      listPods(new KubeClient({ ...kubeConfigFromFile(external), env: { HTTPS_PROXY: proxy.url } })),
    );
    assert.deepEqual(requests, [`CONNECT ${forwarder.address} HTTP/1.1`]);
  });

  it("lower-case https_proxy too, and NO_PROXY (an address, or a CIDR range) sends them direct", async () => {
    const lower = await proxiedDuring(() =>
      listPods(new KubeClient({ ...kubeConfigFromFile(external), env: { https_proxy: proxy.url } })),
    );
    assert.deepEqual(lower, [`CONNECT ${forwarder.address} HTTP/1.1`]);
    for (const noProxy of [ip, `${ip}/32`, `other.example,${forwarder.address}`]) {
      const requests = await proxiedDuring(() =>
        listPods(
          new KubeClient({
            ...kubeConfigFromFile(external),
            env: { HTTPS_PROXY: proxy.url, NO_PROXY: noProxy },
          }),
        ),
      );
      assert.deepEqual(requests, [], `NO_PROXY=${noProxy}`);
    }
  });

  it("HTTPS_PROXY never carries requests to a loopback server", async () => {
    const requests = await proxiedDuring(() =>
      listPods(
        new KubeClient({ ...kubeConfigFromFile(env.kubeconfigPath), env: { HTTPS_PROXY: proxy.url } }),
      ),
    );
    assert.deepEqual(requests, []);
  });
});

describe("registry client, proxies and trust roots", () => {
  let ca: TestCA;
  let forwarder: Forwarder;
  let base: string;

  before(async () => {
    ca = createTestCA(ip);
    const [host = "", port = ""] = env.registry.split(":");
    // The docker-registry serves plain HTTP on loopback; the forwarder adds TLS with the test CA.
    forwarder = await startForwarder(ip, { host, port: Number(port) }, { tls: ca.server });
    base = `${forwarder.address}/proxytest`;
  });

  after(async () => {
    await forwarder.stop();
    ca.remove();
  });

  const probe = (clientEnv: Record<string, string>) =>
    createRegistryClient(base, {
      env: clientEnv,
      keychain: { resolve: async () => ({ kind: "anonymous" }) },
    }).hasManifest("vk-proxy", "hibernate");

  it("goes through HTTPS_PROXY and trusts the CA in SSL_CERT_FILE", async () => {
    let found: boolean | undefined;
    const requests = await proxiedDuring(async () => {
      found = await probe({ HTTPS_PROXY: proxy.url, SSL_CERT_FILE: ca.caFile });
    });
    assert.equal(found, false);
    assert.ok(requests.length > 0);
    assert.deepEqual(new Set(requests), new Set([`CONNECT ${forwarder.address} HTTP/1.1`]));
  });

  it("trusts the CAs in SSL_CERT_DIR", async () => {
    const certDir = join(dir, "certs");
    rmSync(certDir, { recursive: true, force: true });
    writeFileSync(join(dir, "unrelated.pem"), "not a certificate\n");
    mkdirSync(certDir);
    copyFileSync(ca.caFile, join(certDir, "test-ca.pem"));
    assert.equal(
      await probe({ SSL_CERT_FILE: join(dir, "unrelated.pem"), SSL_CERT_DIR: `/nonexistent:${certDir}` }),
      false,
    );
  });

  it("without the CA among the roots, TLS verification fails", async () => {
    await assert.rejects(probe({ HTTPS_PROXY: proxy.url }), (err: Error) => {
      assert.match(String(err.message), /certificate|UNABLE_TO|self.signed|issuer/i);
      return true;
    });
  });

  it("a plain-HTTP registry goes through HTTP_PROXY (an absolute-form request), not HTTPS_PROXY", async () => {
    const [host = "", port = ""] = env.registry.split(":");
    const plain = await startForwarder(ip, { host, port: Number(port) });
    try {
      const send = (proxyEnv: Record<string, string>) =>
        createTransport({ proxy: proxyFromEnvironment(proxyEnv) })(`http://${plain.address}/v2/`, {
          method: "GET",
          headers: {},
        });
      let status = 0;
      const viaHttpProxy = await proxiedDuring(async () => {
        status = (await send({ HTTP_PROXY: proxy.url })).status;
      });
      assert.equal(status, 200);
      assert.deepEqual(viaHttpProxy, [`GET http://${plain.address}/v2/ HTTP/1.1`]);
      assert.deepEqual(await proxiedDuring(() => send({ HTTPS_PROXY: proxy.url })), []);
    } finally {
      await plain.stop();
    }
  });

  it("NO_PROXY sends registry requests direct", async () => {
    const requests = await proxiedDuring(() =>
      probe({ HTTPS_PROXY: proxy.url, NO_PROXY: ip, SSL_CERT_FILE: ca.caFile }),
    );
    assert.deepEqual(requests, []);
  });
});
