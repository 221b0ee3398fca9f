import { execFileSync } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import { selfSignedCertificate } from "./certs.ts";
import { type ApiConnection, apiRequest, probeHealthy } from "./kubeapi.ts";
import { freePort, freePortPair, retryOnPortClash } from "./ports.ts";
import {
  type Daemon,
  forgetDirectory,
  removeDirectoryOnExit,
  startReadyDaemon,
  waitUntil,
} from "./process.ts";

const repoRoot = resolve(import.meta.dirname, "../..");
const buildScript = join(import.meta.dirname, "controlplane/build.sh");

export interface ControlPlaneOptions {
  /** CRD manifests to install; default config/crd/bases. */
  crdsDir?: string;
  /** Start kube-scheduler; default true. */
  scheduler?: boolean;
  /** Directory holding etcd, kube-apiserver, kube-scheduler and kubectl; default: ask build.sh. */
  binDir?: string;
}

export interface ControlPlane {
  /** https://127.0.0.1:PORT */
  server: string;
  /** Bearer token of an admin in system:masters. */
  token: string;
  /** The apiserver's self-signed serving certificate (leaf + CA): the CA bundle clients trust. */
  caFile: string;
  kubeconfigPath: string;
  binDir: string;
  /** Temporary directory holding data, certificates and the logs (<name>.log) of the processes. */
  dir: string;
  /** Wall-clock time startControlPlane() took, in milliseconds. */
  startupMs: number;
  /** Stops kube-apiserver and starts it again on the same port against the same etcd. */
  restartApiServer(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The directory with the control-plane binaries, from COCOON_TESTENV_BIN or build.sh. build.sh is
 * cached, so this is instant once `make testenv` has run; otherwise it builds (minutes).
 */
export function controlPlaneBinDir(): string {
  const fromEnv = process.env.COCOON_TESTENV_BIN;
  if (fromEnv) return fromEnv;
  return execFileSync(buildScript, { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim();
}

/** Starts etcd, kube-apiserver and (optionally) kube-scheduler on loopback and installs the CRDs. */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const startedAt = Date.now();
  const binDir = opts.binDir ?? controlPlaneBinDir();
  const dir = mkdtempSync(join(tmpdir(), "cocoon-cp-"));
  removeDirectoryOnExit(dir);
  const daemons: Daemon[] = [];
  const stopAll = async (): Promise<void> => {
    // Reverse start order: scheduler, apiserver, etcd.
    for (const daemon of daemons.splice(0).reverse()) await daemon.stop();
  };
  try {
    const etcd = await retryOnPortClash(() => startEtcd(binDir, dir));
    daemons.push(etcd.daemon);
    // A clash on the first start picks a new port; a restart keeps the one the cluster was given.
    const { apiserver, daemon: firstApiserverDaemon } = await retryOnPortClash(async () => {
      const prepared = await prepareApiServer(binDir, dir, etcd.url);
      return { apiserver: prepared, daemon: await prepared.start() };
    });
    let apiserverDaemon = firstApiserverDaemon;
    daemons.push(apiserverDaemon);
    const conn: ApiConnection = {
      server: apiserver.server,
      token: apiserver.token,
      caFile: apiserver.caFile,
    };
    const kubeconfigPath = join(dir, "kubeconfig");
    writeFileSync(kubeconfigPath, kubeconfigYaml(conn), { mode: 0o600 });
    // The scheduler and the CRDs do not depend on each other; settle both so a failure of one
    // still leaves the other's daemon to be stopped.
    const [scheduler, crds] = await Promise.allSettled([
      (opts.scheduler ?? true)
        ? retryOnPortClash(() => startScheduler(binDir, dir, kubeconfigPath))
        : undefined,
      installCrds(conn, opts.crdsDir ?? join(repoRoot, "config/crd/bases")),
    ]);
    if (scheduler.status === "fulfilled" && scheduler.value) daemons.push(scheduler.value);
    if (scheduler.status === "rejected") throw scheduler.reason;
    if (crds.status === "rejected") throw crds.reason;

    let stopped = false;
    return {
      ...conn,
      kubeconfigPath,
      binDir,
      dir,
      startupMs: Date.now() - startedAt,
      async restartApiServer() {
        const slot = daemons.indexOf(apiserverDaemon);
        await apiserverDaemon.stop();
        apiserverDaemon = await apiserver.start();
        daemons[slot] = apiserverDaemon;
      },
      async stop() {
        if (stopped) return;
        stopped = true;
        await stopAll();
        rmSync(dir, { recursive: true, force: true });
        forgetDirectory(dir);
      },
    };
  } catch (err) {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
    forgetDirectory(dir);
    throw err;
  }
}

async function startEtcd(binDir: string, dir: string): Promise<{ url: string; daemon: Daemon }> {
  const [clientPort, peerPort] = await freePortPair();
  const url = `http://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const daemon = await startReadyDaemon(
    {
      name: "etcd",
      command: join(binDir, "etcd"),
      args: [
        `--data-dir=${join(dir, "etcd")}`,
        `--listen-client-urls=${url}`,
        `--advertise-client-urls=${url}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=default=${peerUrl}`,
        "--unsafe-no-fsync=true",
      ],
      logFile: join(dir, "etcd.log"),
    },
    "etcd /health",
    () => probeHealthy(`${url}/health`),
  );
  return { url, daemon };
}

interface PreparedApiServer extends ApiConnection {
  /** Starts kube-apiserver with the prepared flags and waits for /readyz. */
  start(): Promise<Daemon>;
}

/**
 * Writes the token file and service-account keys and picks the port once, so a restart reuses them.
 * No --tls-* flags: the apiserver self-signs into <cert-dir>/apiserver.{crt,key} (SANs include the
 * bind address) and keeps that pair across restarts.
 */
async function prepareApiServer(binDir: string, dir: string, etcdUrl: string): Promise<PreparedApiServer> {
  const port = await freePort();
  const server = `https://127.0.0.1:${port}`;
  const certDir = join(dir, "pki");
  mkdirSync(certDir, { recursive: true });
  const token = randomBytes(24).toString("hex");
  const tokenFile = join(certDir, "tokens.csv");
  writeFileSync(tokenFile, `${token},admin,admin,"system:masters"\n`, { mode: 0o600 });
  const saKeys = generateKeyPairSync("ec", {
    namedCurve: "P-256",
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  writeFileSync(join(certDir, "sa.pub"), saKeys.publicKey);
  writeFileSync(join(certDir, "sa.key"), saKeys.privateKey, { mode: 0o600 });
  // The certificate the apiserver shows kubelets (the simulator's nodes, for exec), as kubeadm's
  // apiserver-kubelet-client. The kubelets' own serving certificates are self-signed and not verified
  // (no --kubelet-certificate-authority), as with vk-cocoon's generated certificate.
  const kubeletClient = selfSignedCertificate(certDir, "apiserver-kubelet-client", {
    subject: "/O=kubeadm:cluster-admins/CN=kube-apiserver-kubelet-client",
    days: 30,
  });
  const args = [
    `--etcd-servers=${etcdUrl}`,
    `--cert-dir=${certDir}`,
    `--secure-port=${port}`,
    "--bind-address=127.0.0.1",
    "--service-cluster-ip-range=10.0.0.0/24",
    "--allow-privileged=true",
    // No controller-manager: nothing creates service accounts or removes the not-ready taint.
    "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
    "--authorization-mode=RBAC",
    `--token-auth-file=${tokenFile}`,
    `--service-account-issuer=${server}/`,
    `--service-account-key-file=${join(certDir, "sa.pub")}`,
    `--service-account-signing-key-file=${join(certDir, "sa.key")}`,
    // The loopback bind address is not a valid endpoint for the `kubernetes` Service.
    "--endpoint-reconciler-type=none",
    `--kubelet-client-certificate=${kubeletClient.certFile}`,
    `--kubelet-client-key=${kubeletClient.keyFile}`,
    // A simulated node's InternalIP is a loopback address its kubelet listens on; its Hostname
    // address (the node name) resolves nowhere, and it is first in the default order.
    "--kubelet-preferred-address-types=InternalIP",
  ];
  let generation = 0;
  return {
    server,
    token,
    caFile: join(certDir, "apiserver.crt"),
    start() {
      generation += 1;
      return startReadyDaemon(
        {
          name: "kube-apiserver",
          command: join(binDir, "kube-apiserver"),
          args,
          logFile: join(dir, `kube-apiserver.${generation}.log`),
          // On SIGTERM it waits for open watch connections to drain, which clients of a test
          // cluster may never do. Everything is in etcd, so a kill loses nothing.
          stopGraceMs: 1_000,
        },
        "kube-apiserver /readyz",
        () => probeHealthy(`${server}/readyz`),
      );
    },
  };
}

/** A kubeconfig (YAML) for `conn`, with the CA referenced by path and the admin token inline. */
export function kubeconfigYaml(conn: ApiConnection): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "testenv", cluster: { server: conn.server, "certificate-authority": conn.caFile } }],
    users: [{ name: "admin", user: { token: conn.token } }],
    contexts: [{ name: "testenv", context: { cluster: "testenv", user: "admin", namespace: "default" } }],
    "current-context": "testenv",
  });
}

async function startScheduler(binDir: string, dir: string, kubeconfigPath: string): Promise<Daemon> {
  const port = await freePort();
  return startReadyDaemon(
    {
      name: "kube-scheduler",
      command: join(binDir, "kube-scheduler"),
      args: [
        `--kubeconfig=${kubeconfigPath}`,
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        `--secure-port=${port}`,
      ],
      logFile: join(dir, "kube-scheduler.log"),
    },
    "kube-scheduler /healthz",
    () => probeHealthy(`https://127.0.0.1:${port}/healthz`),
  );
}

/** Server-side applies every CustomResourceDefinition in `crdsDir` and waits until each is Established. */
async function installCrds(conn: ApiConnection, crdsDir: string): Promise<void> {
  const crds = yamlFiles(crdsDir)
    .flatMap((file) => parseAllDocuments(readFileSync(file, "utf8")).map((doc) => doc.toJS()))
    .filter((obj) => obj?.kind === "CustomResourceDefinition");
  if (crds.length === 0) throw new Error(`no CustomResourceDefinition found in ${crdsDir}`);
  const base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  for (const crd of crds) {
    const name: string = crd.metadata.name;
    const res = await apiRequest(
      conn,
      "PATCH",
      `${base}/${name}?fieldManager=cocoon-testenv&force=true`,
      crd,
      "application/apply-patch+yaml",
    );
    if (res.status >= 300)
      throw new Error(`installing CRD ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  for (const crd of crds) {
    const name: string = crd.metadata.name;
    await waitUntil(`CRD ${name} Established`, async () => {
      const res = await apiRequest(conn, "GET", `${base}/${name}`);
      const conditions: { type: string; status: string }[] = res.body?.status?.conditions ?? [];
      return conditions.some((c) => c.type === "Established" && c.status === "True");
    });
  }
}

function yamlFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith(".yaml") || n.endsWith(".yml"))
    .sort()
    .map((n) => join(dir, n));
}
