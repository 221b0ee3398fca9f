import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { TLSSocket } from "node:tls";
import { stringify } from "yaml";
import { FakeClock } from "../../../src/clock.ts";
import { KubeClient } from "../../../src/controller/client.ts";
import {
  inClusterRestConfig,
  type KubeconfigDocument,
  loadRestConfig,
  readKubeconfigFile,
  readKubeconfigPathList,
  restConfigFromKubeconfig,
  TOKEN_FILE_REFRESH_MS,
} from "../../../src/controller/kubeconfig.ts";
import { COCOONSETS } from "../../../src/controller/resources.ts";
import { selfSignedCertificate } from "../../env/certs.ts";

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "cocoon-kubeconfig-"));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function write(path: string, doc: KubeconfigDocument): string {
  writeFileSync(path, stringify(doc));
  return path;
}

/** A one-context kubeconfig document. */
function single(cluster: object, user: object, extra: Partial<KubeconfigDocument> = {}): KubeconfigDocument {
  return {
    clusters: [{ name: "c", cluster }],
    users: [{ name: "u", user }],
    contexts: [{ name: "x", context: { cluster: "c", user: "u", namespace: "ns" } }],
    "current-context": "x",
    ...extra,
  };
}

const b64 = (s: string) => Buffer.from(s).toString("base64");

describe("kubeconfig files", () => {
  it("merges a KUBECONFIG list as kubectl does: first file wins per name, first current-context wins", async () => {
    const dir = tempDir();
    const a = write(join(dir, "a"), {
      clusters: [
        { name: "shared", cluster: { server: "https://a.example:6443" } },
        { name: "shared", cluster: { server: "https://a-dup.example:6443" } },
      ],
      users: [{ name: "admin", user: { token: "from-a" } }],
      contexts: [{ name: "ctx", context: { cluster: "shared", user: "admin", namespace: "from-a" } }],
    });
    const b = write(join(dir, "b"), {
      clusters: [
        { name: "shared", cluster: { server: "https://b.example:6443" } },
        { name: "other", cluster: { server: "https://other.example" } },
      ],
      users: [{ name: "admin", user: { token: "from-b" } }],
      contexts: [
        { name: "ctx", context: { cluster: "other", user: "admin" } },
        { name: "b-ctx", context: { cluster: "other", user: "admin" } },
      ],
      "current-context": "ctx",
    });
    const c = write(join(dir, "c"), { "current-context": "b-ctx" });
    const kc = readKubeconfigPathList([a, join(dir, "missing"), "", b, a, c].join(":"));
    assert.equal(kc.currentContext, "ctx");
    assert.deepEqual([...kc.clusters.keys()], ["shared", "other"]);
    assert.deepEqual(kc.files, [a, b, c]);
    const rest = restConfigFromKubeconfig(kc);
    assert.equal(rest.server, "https://a.example:6443");
    assert.equal(rest.namespace, "from-a");
    assert.equal((await rest.credentials()).authorization, "Bearer from-a");
    assert.equal(restConfigFromKubeconfig(kc, { context: "b-ctx" }).server, "https://other.example");
  });

  it("fails clearly when no KUBECONFIG file exists", () => {
    assert.throws(
      () => readKubeconfigPathList("/nonexistent/a:/nonexistent/b"),
      /none of the KUBECONFIG files/,
    );
  });

  it("resolves relative paths against the directory of the file that names them", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "sub", "certs"), { recursive: true });
    writeFileSync(join(dir, "sub", "certs", "ca.pem"), "CA-PEM");
    writeFileSync(join(dir, "sub", "certs", "client.pem"), "CERT-PEM");
    writeFileSync(join(dir, "sub", "certs", "client.key"), "KEY-PEM");
    writeFileSync(join(dir, "sub", "token"), "file-token\n");
    const path = write(
      join(dir, "sub", "config"),
      single(
        { server: "https://k.example", "certificate-authority": "certs/ca.pem" },
        { tokenFile: "token", "client-certificate": "certs/client.pem", "client-key": "./certs/client.key" },
      ),
    );
    const kc = readKubeconfigFile(path);
    assert.equal(kc.clusters.get("c")?.["certificate-authority"], join(dir, "sub", "certs", "ca.pem"));
    assert.equal(kc.users.get("u")?.tokenFile, join(dir, "sub", "token"));
    const rest = restConfigFromKubeconfig(kc);
    assert.equal(rest.ca, "CA-PEM");
    assert.deepEqual(await rest.credentials(), {
      cert: "CERT-PEM",
      key: "KEY-PEM",
      authorization: "Bearer file-token",
    });
  });

  it("prefers -data fields over files, and reads TLS settings", async () => {
    const dir = tempDir();
    const path = write(
      join(dir, "config"),
      single(
        {
          server: "https://k.example",
          "certificate-authority": "missing-ca.pem",
          "certificate-authority-data": b64("CA-DATA"),
          "insecure-skip-tls-verify": true,
          "tls-server-name": "kubernetes.default",
        },
        {
          "client-certificate": "missing.pem",
          "client-certificate-data": b64("CERT-DATA"),
          "client-key": "missing.key",
          "client-key-data": b64("KEY-DATA"),
        },
      ),
    );
    const rest = restConfigFromKubeconfig(readKubeconfigFile(path));
    assert.equal(rest.ca, "CA-DATA");
    assert.equal(rest.insecureSkipTLSVerify, true);
    assert.equal(rest.tlsServerName, "kubernetes.default");
    assert.deepEqual(await rest.credentials(), { cert: "CERT-DATA", key: "KEY-DATA" });
  });

  it("sends basic auth for username and password", async () => {
    const dir = tempDir();
    const path = write(
      join(dir, "config"),
      single({ server: "https://k" }, { username: "me", password: "pw" }),
    );
    const rest = restConfigFromKubeconfig(readKubeconfigFile(path));
    assert.equal((await rest.credentials()).authorization, `Basic ${b64("me:pw")}`);
  });

  it("carries the cluster's proxy-url", () => {
    const dir = tempDir();
    const rest = restConfigFromKubeconfig(
      readKubeconfigFile(
        write(join(dir, "config"), single({ server: "https://k", "proxy-url": "http://proxy:3128" }, {})),
      ),
    );
    assert.equal(rest.proxyUrl, "http://proxy:3128");
  });

  it("refuses what it does not support, and broken references, with clear errors", () => {
    const dir = tempDir();
    const load = (doc: KubeconfigDocument) =>
      restConfigFromKubeconfig(readKubeconfigFile(write(join(dir, "config"), doc)));
    assert.throws(
      () => load(single({ server: "https://k" }, { "auth-provider": { name: "gcp" } })),
      /auth-provider "gcp" is not supported; use an exec credential plugin/,
    );
    assert.throws(
      () => load(single({ server: "https://k", "proxy-url": "socks5://proxy:1080" }, {})),
      /proxy-url=socks5:\/\/proxy:1080: only http:\/\/ and https:\/\/ proxies are supported \(not socks5\)/,
    );
    assert.throws(
      () => load(single({ server: "https://k", "proxy-url": "ftp://proxy" }, {})),
      /proxy-url: unsupported scheme "ftp", must be http, https, or socks5/,
    );
    assert.throws(() => load(single({ server: "https://k" }, { as: "someone" })), /impersonation/);
    assert.throws(
      () => load(single({ server: "https://k" }, { token: "t", username: "u", password: "p" })),
      /more than one authentication method/,
    );
    assert.throws(
      () => load(single({ server: "https://k" }, { "client-certificate-data": b64("C") })),
      /client-certificate and client-key must be given together/,
    );
    assert.throws(
      () => load(single({ server: "https://k" }, {}, { "current-context": "nope" })),
      /context "nope" not found/,
    );
    assert.throws(
      () => load(single({ server: "https://k" }, {}, { "current-context": "" })),
      /no current-context/,
    );
    assert.throws(() => load({ ...single({ server: "https://k" }, {}), users: [] }), /user "u" not found/);
    assert.throws(
      () => load(single({ server: "https://k" }, { tokenFile: "no-such-file" })),
      /reading token file .*no-such-file/,
    );
  });

  it("re-reads a token file once a minute (injected clock), and at once after a 401", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "token"), "one");
    const clock = new FakeClock();
    const path = write(join(dir, "config"), single({ server: "https://k" }, { tokenFile: "token" }));
    const rest = restConfigFromKubeconfig(readKubeconfigFile(path), { clock });
    const first = await rest.credentials();
    assert.equal(first.authorization, "Bearer one");
    writeFileSync(join(dir, "token"), "two\n");
    clock.advance(TOKEN_FILE_REFRESH_MS - 1);
    assert.equal(await rest.credentials(), first, "cached within the minute");
    clock.advance(1);
    const second = await rest.credentials();
    assert.equal(second.authorization, "Bearer two");
    // An unreadable file keeps the last token.
    rmSync(join(dir, "token"));
    clock.advance(TOKEN_FILE_REFRESH_MS);
    assert.equal((await rest.credentials()).authorization, "Bearer two");
    // A 401 answered to the current token re-reads at the next request; one for a stale token does not.
    writeFileSync(join(dir, "token"), "three");
    rest.unauthorized(first);
    assert.equal((await rest.credentials()).authorization, "Bearer two");
    rest.unauthorized(await rest.credentials());
    assert.equal((await rest.credentials()).authorization, "Bearer three");
  });
});

/** An exec plugin: counts its runs, records its environment, prints the ExecCredential in $OUT. */
function execPlugin(dir: string): { runs: () => number; lastInfo: () => unknown; lastArgs: () => string } {
  const script = join(dir, "bin", "plugin.sh");
  mkdirSync(join(dir, "bin"), { recursive: true });
  writeFileSync(
    script,
    [
      "#!/bin/sh",
      'n=$(( $(cat "$STATE/runs" 2>/dev/null || echo 0) + 1 ))',
      'echo "$n" > "$STATE/runs"',
      'printf "%s" "$KUBERNETES_EXEC_INFO" > "$STATE/info"',
      'echo "$*" > "$STATE/args"',
      'if [ -n "$FAIL" ]; then echo "plugin says no" >&2; exit 3; fi',
      'printf "%s" "$OUT" | sed "s/RUN/$n/g"',
      "",
    ].join("\n"),
  );
  chmodSync(script, 0o755);
  return {
    runs: () => Number(readFileSync(join(dir, "runs"), "utf8").trim()),
    lastInfo: () => JSON.parse(readFileSync(join(dir, "info"), "utf8")),
    lastArgs: () => readFileSync(join(dir, "args"), "utf8").trim(),
  };
}

function execDoc(dir: string, apiVersion: string, out: object, extra: object = {}): KubeconfigDocument {
  return {
    clusters: [
      {
        name: "c",
        cluster: {
          server: "https://k.example:6443",
          "certificate-authority-data": b64("CA"),
          extensions: [{ name: "client.authentication.k8s.io/exec", extension: { audience: "k8s" } }],
        },
      },
    ],
    users: [
      {
        name: "u",
        user: {
          exec: {
            apiVersion,
            command: "./bin/plugin.sh",
            args: ["--flag", "value"],
            env: [
              { name: "STATE", value: dir },
              { name: "OUT", value: JSON.stringify(out) },
            ],
            interactiveMode: "IfAvailable",
            provideClusterInfo: true,
            installHint: "install the plugin",
            ...extra,
          },
        },
      },
    ],
    contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
    "current-context": "x",
  };
}

describe("exec credential plugins", () => {
  const V1 = "client.authentication.k8s.io/v1";
  const V1BETA1 = "client.authentication.k8s.io/v1beta1";

  it("runs the plugin with args, env and KUBERNETES_EXEC_INFO; caches the token until it expires", async () => {
    const dir = tempDir();
    const plugin = execPlugin(dir);
    const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
    const out = {
      apiVersion: V1,
      kind: "ExecCredential",
      status: { token: "tok-RUN", expirationTimestamp: "2026-01-01T00:10:00Z" },
    };
    const path = write(join(dir, "config"), execDoc(dir, V1, out));
    const rest = restConfigFromKubeconfig(readKubeconfigFile(path), { clock });
    // Concurrent first requests share one run.
    const [a, b] = await Promise.all([rest.credentials(), rest.credentials()]);
    assert.equal(a.authorization, "Bearer tok-1");
    assert.equal(b, a);
    assert.equal(plugin.runs(), 1);
    assert.equal(plugin.lastArgs(), "--flag value");
    assert.deepEqual(plugin.lastInfo(), {
      apiVersion: V1,
      kind: "ExecCredential",
      spec: {
        interactive: false,
        cluster: {
          server: "https://k.example:6443",
          "certificate-authority-data": b64("CA"),
          config: { audience: "k8s" },
        },
      },
    });
    clock.advance(10 * 60_000 - 1);
    assert.equal((await rest.credentials()).authorization, "Bearer tok-1");
    assert.equal(plugin.runs(), 1);
    clock.advance(1);
    assert.equal((await rest.credentials()).authorization, "Bearer tok-2");
    assert.equal(plugin.runs(), 2);
  });

  it("re-runs after a 401 to the current credential, not to a stale one", async () => {
    const dir = tempDir();
    const plugin = execPlugin(dir);
    const out = { apiVersion: V1BETA1, kind: "ExecCredential", status: { token: "tok-RUN" } };
    const path = write(join(dir, "config"), execDoc(dir, V1BETA1, out, { provideClusterInfo: false }));
    const rest = restConfigFromKubeconfig(readKubeconfigFile(path), { clock: new FakeClock() });
    const first = await rest.credentials();
    assert.deepEqual(plugin.lastInfo(), {
      apiVersion: V1BETA1,
      kind: "ExecCredential",
      spec: { interactive: false },
    });
    assert.equal(await rest.credentials(), first, "no expiry: cached");
    rest.unauthorized(first);
    const second = await rest.credentials();
    assert.equal(second.authorization, "Bearer tok-2");
    rest.unauthorized(first);
    assert.equal(await rest.credentials(), second);
    assert.equal(plugin.runs(), 2);
  });

  it("returns client certificate data", async () => {
    const dir = tempDir();
    execPlugin(dir);
    const out = {
      apiVersion: V1,
      kind: "ExecCredential",
      status: { clientCertificateData: "CERT-RUN", clientKeyData: "KEY" },
    };
    const path = write(join(dir, "config"), execDoc(dir, V1, out));
    const rest = restConfigFromKubeconfig(readKubeconfigFile(path));
    assert.deepEqual(await rest.credentials(), { cert: "CERT-1", key: "KEY" });
  });

  it("reports plugin failures, bad output and a missing command clearly", async () => {
    const dir = tempDir();
    const plugin = execPlugin(dir);
    const good = { apiVersion: V1, kind: "ExecCredential", status: { token: "t" } };
    const load = (doc: KubeconfigDocument) =>
      restConfigFromKubeconfig(readKubeconfigFile(write(join(dir, "config"), doc)));
    const failing = execDoc(dir, V1, good);
    failing.users?.[0]?.user?.exec?.env?.push({ name: "FAIL", value: "1" });
    await assert.rejects(load(failing).credentials(), /exec plugin .*plugin\.sh.*plugin says no/s);
    await assert.rejects(
      load(execDoc(dir, V1, { ...good, apiVersion: V1BETA1 })).credentials(),
      /returned client.authentication.k8s.io\/v1beta1\/ExecCredential, want client.authentication.k8s.io\/v1/,
    );
    await assert.rejects(
      load(execDoc(dir, V1, { ...good, status: {} })).credentials(),
      /neither a token nor a certificate/,
    );
    await assert.rejects(
      load(execDoc(dir, V1, good, { command: "cocoon-no-such-plugin" })).credentials(),
      /cocoon-no-such-plugin.*ENOENT.*install the plugin/s,
    );
    assert.ok(plugin.runs() >= 3);
    assert.throws(
      () => load(execDoc(dir, "client.authentication.k8s.io/v1alpha1", good)),
      /apiVersion "client.authentication.k8s.io\/v1alpha1" is not supported/,
    );
    assert.throws(() => load(execDoc(dir, V1, good, { interactiveMode: "Always" })), /interactive terminal/);
  });
});

describe("in-cluster and lookup order", () => {
  function serviceAccount(): string {
    const root = tempDir();
    writeFileSync(join(root, "token"), "sa-token-1\n");
    writeFileSync(join(root, "ca.crt"), "SA-CA");
    writeFileSync(join(root, "namespace"), "operators");
    return root;
  }

  it("reads the service account and re-reads its token every minute", async () => {
    const root = serviceAccount();
    const clock = new FakeClock();
    const env = { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" };
    const rest = inClusterRestConfig({ env, root, clock });
    assert.equal(rest.server, "https://[fd00::1]:443");
    assert.equal(rest.ca, "SA-CA");
    assert.equal(rest.namespace, "operators");
    assert.equal(rest.insecureSkipTLSVerify, false);
    assert.equal((await rest.credentials()).authorization, "Bearer sa-token-1");
    writeFileSync(join(root, "token"), "sa-token-2");
    clock.advance(30_000);
    assert.equal((await rest.credentials()).authorization, "Bearer sa-token-1");
    clock.advance(30_000);
    assert.equal((await rest.credentials()).authorization, "Bearer sa-token-2");
  });

  it("needs the service env and a readable token", () => {
    const root = serviceAccount();
    assert.throws(() => inClusterRestConfig({ env: {}, root }), /KUBERNETES_SERVICE_HOST/);
    rmSync(join(root, "token"));
    const env = { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" };
    assert.throws(() => inClusterRestConfig({ env, root }), /reading token file/);
  });

  it("follows controller-runtime's order: --kubeconfig, KUBECONFIG, in-cluster, ~/.kube/config", () => {
    const root = serviceAccount();
    const home = tempDir();
    mkdirSync(join(home, ".kube"));
    write(join(home, ".kube", "config"), single({ server: "https://home" }, {}));
    const explicit = write(join(tempDir(), "explicit"), single({ server: "https://explicit" }, {}));
    const listed = write(join(tempDir(), "listed"), single({ server: "https://listed" }, {}));
    const pod = { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" };
    const server = (opts: Parameters<typeof loadRestConfig>[0]) =>
      loadRestConfig({ home, serviceAccountRoot: root, ...opts })?.server;
    assert.equal(server({ explicitPath: explicit, env: { ...pod, KUBECONFIG: listed } }), "https://explicit");
    assert.equal(server({ env: { ...pod, KUBECONFIG: listed } }), "https://listed");
    assert.equal(server({ env: pod }), "https://10.0.0.1:443");
    assert.equal(server({ env: {} }), "https://home");
    assert.equal(loadRestConfig({ env: {}, home: tempDir() }), undefined);
  });
});

describe("KubeClient with the kubeconfig", () => {
  it("sends the exec plugin's token and re-runs the plugin after a 401", async () => {
    const dir = tempDir();
    const plugin = execPlugin(dir);
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers.authorization ?? "");
      const ok = req.headers.authorization === "Bearer tok-2";
      res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
      res.end(
        JSON.stringify(
          ok
            ? { metadata: { name: "s", namespace: "ns" } }
            : { kind: "Status", code: 401, reason: "Unauthorized", message: "Unauthorized" },
        ),
      );
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const out = {
      apiVersion: "client.authentication.k8s.io/v1",
      kind: "ExecCredential",
      status: { token: "tok-RUN" },
    };
    const doc = execDoc(dir, "client.authentication.k8s.io/v1", out);
    const cluster = doc.clusters?.[0]?.cluster;
    if (cluster) cluster.server = url;
    const client = new KubeClient({
      kubeConfig: restConfigFromKubeconfig(readKubeconfigFile(write(join(dir, "config"), doc))),
    });
    try {
      await assert.rejects(client.get(COCOONSETS, "ns", "s"), /Unauthorized/);
      const got = await client.get<{ metadata: { name: string } }>(COCOONSETS, "ns", "s");
      assert.equal(got.metadata.name, "s");
      assert.deepEqual(seen, ["Bearer tok-1", "Bearer tok-2"]);
      assert.equal(plugin.runs(), 2);
    } finally {
      client.close();
      server.close();
    }
  });

  it("verifies the server against the kubeconfig CA and presents the client certificate", async () => {
    const dir = tempDir();
    selfSignedCertificate(dir, "server", { subject: "/CN=apiserver", altNames: "DNS:apiserver.test" });
    selfSignedCertificate(dir, "client", { subject: "/CN=cocoon-operator" });
    const subjects: string[] = [];
    const server = https.createServer(
      {
        key: readFileSync(join(dir, "server.key")),
        cert: readFileSync(join(dir, "server.crt")),
        ca: readFileSync(join(dir, "client.crt")),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        subjects.push(String((req.socket as TLSSocket).getPeerCertificate().subject?.CN));
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ metadata: { name: "s" } }));
      },
    );
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as AddressInfo).port;
    const path = write(
      join(dir, "config"),
      single(
        {
          server: `https://127.0.0.1:${port}`,
          "certificate-authority": "server.crt",
          "tls-server-name": "apiserver.test",
        },
        { "client-certificate": "client.crt", "client-key": "client.key" },
      ),
    );
    const client = new KubeClient({ kubeConfig: restConfigFromKubeconfig(readKubeconfigFile(path)) });
    try {
      await client.get(COCOONSETS, "ns", "s");
      assert.deepEqual(subjects, ["cocoon-operator"]);
    } finally {
      client.close();
      server.close();
    }
  });
});
