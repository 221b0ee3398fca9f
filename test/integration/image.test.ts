// The operator image as a cluster runs it: the repository's Dockerfile built by buildah (on a base made
// from Debian packages and the `node` package's Node 24: test/env/image/), then the image's own
// entrypoint run with `buildah run` on a read-only root, as the cocoon-operator service account under
// config/rbac, against a control plane of its own (it watches every namespace, so it must not share the
// suite's API server). It runs as the image's uid 1000 on a read-only root, answers /readyz, leads, and
// brings a CocoonSet to Running on the vk-cocoon simulator; SIGTERM stops it cleanly.

import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type ControlPlane, kubeconfigYaml, startControlPlane } from "../env/controlplane.ts";
import { freePortPair } from "../env/ports.ts";
import { type Simulator, startSimulator } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { repoRoot } from "../support/build.ts";
import { applyOperatorRbac, serviceAccountToken } from "../support/serviceaccount.ts";
import { createSet, waitRunning } from "../support/setwait.ts";

const imageDir = join(repoRoot, "test/env/image");
const buildah = (...args: string[]) =>
  execFileSync(join(imageDir, "buildah"), args, { encoding: "utf8" }).trim();
/** Where the test's kubeconfig and CA are mounted, read-only, inside the container. */
const CONFIG_MOUNT = "/etc/cocoon-test";
const NS = "cocoon-system";

const registry = testEnv().registry;
const suffix = randomBytes(3).toString("hex");
let cp: ControlPlane;
let sim: Simulator | undefined;
let workDir: string;
let image: string;
let container: string | undefined;
let rootfs: string | undefined;
let operator: ChildProcess | undefined;
let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
const output: string[] = [];
let metricsPort: number;
let probePort: number;

interface ImageConfig {
  User: string;
  Entrypoint: string[];
  WorkingDir: string;
}

function imageConfig(): ImageConfig {
  return JSON.parse(buildah("inspect", "--type", "image", image)).OCIv1.config as ImageConfig;
}

/** The entrypoint's process: the one whose command line is the entrypoint with our metrics port. */
function operatorPid(entrypoint: string[]): number | undefined {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const isEntrypoint = entrypoint.every((arg, i) => argv[i]?.endsWith(arg));
      if (isEntrypoint && argv.includes(`--metrics-bind-address=127.0.0.1:${metricsPort}`))
        return Number(entry);
    } catch {
      // The process ended while we looked.
    }
  }
  return undefined;
}

function logs(): string {
  return output.join("").split("\n").slice(-30).join("\n");
}

before(async () => {
  assert.equal(
    process.getuid?.(),
    0,
    "buildah on the vfs driver and the read-only bind mount need root (.ci/run runs as root)",
  );
  // Cached: instant once built; the first build takes minutes (docs/releasing.md, BENCHMARKS.md).
  image = execFileSync(join(imageDir, "build.sh"), {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
  workDir = mkdtempSync(join(tmpdir(), "cocoon-image-"));
  cp = await startControlPlane();
  applyOperatorRbac(cp);
  const config = join(workDir, "config");
  mkdirSync(config);
  copyFileSync(cp.caFile, join(config, "ca.crt"));
  writeFileSync(
    join(config, "kubeconfig"),
    kubeconfigYaml({
      server: cp.server,
      token: await serviceAccountToken(cp, NS, "cocoon-operator"),
      caFile: `${CONFIG_MOUNT}/ca.crt`,
    }),
    { mode: 0o644 },
  );
  sim = await startSimulator({ ...cp, registry, nodes: [{ name: `img-${suffix}`, pool: "default" }] });

  // The root filesystem read-only, as readOnlyRootFilesystem makes it: a read-only bind of the container's
  // root over itself (buildah run has no flag for it). The mountpoints buildah binds onto (its
  // /run/.containerenv, the config volume) must exist before.
  container = buildah("from", "--pull=false", "--name", `cocoon-image-test-${suffix}`, image);
  rootfs = buildah("mount", container);
  writeFileSync(join(rootfs, "run/.containerenv"), "");
  mkdirSync(join(rootfs, CONFIG_MOUNT), { recursive: true });
  execFileSync("mount", ["--bind", rootfs, rootfs]);
  execFileSync("mount", ["-o", "remount,bind,ro", rootfs]);

  [metricsPort, probePort] = await freePortPair();
  const { Entrypoint } = imageConfig();
  operator = spawn(
    join(imageDir, "buildah"),
    [
      "run",
      "--volume",
      `${config}:${CONFIG_MOUNT}:ro`,
      "--env",
      `OCI_REGISTRY=${registry}`,
      "--env",
      `POD_NAMESPACE=${NS}`,
      "--env",
      `KUBECONFIG=${CONFIG_MOUNT}/kubeconfig`,
      container,
      "--",
      ...Entrypoint,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      `--health-probe-bind-address=127.0.0.1:${probePort}`,
      "--leader-elect",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  operator.stdout?.setEncoding("utf8").on("data", (chunk: string) => output.push(chunk));
  operator.stderr?.setEncoding("utf8").on("data", (chunk: string) => output.push(chunk));
  exited = new Promise((done) => operator?.once("exit", (code, signal) => done({ code, signal })));
});

after(async () => {
  if (operator && operator.exitCode === null && operator.signalCode === null) {
    const pid = operatorPid(imageConfig().Entrypoint);
    if (pid) process.kill(pid, "SIGKILL");
    await exited;
  }
  if (rootfs) execFileSync("umount", [rootfs]);
  if (container) buildah("rm", container);
  await sim?.stop({ removeNodes: true });
  await cp?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

describe("the built image, run by buildah against a control plane", { timeout: 180_000 }, () => {
  let pid: number;

  it("runs the image's entrypoint as uid 1000 on a read-only root", async () => {
    const config = imageConfig();
    assert.equal(config.User, "1000:1000");
    assert.equal(config.WorkingDir, "/app");
    pid = await waitFor("the entrypoint's process", async () => {
      assert.equal(operator?.exitCode, null, `buildah run exited:\n${logs()}`);
      return operatorPid(config.Entrypoint);
    });
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    assert.match(status, /^Uid:\s+1000\s+1000\s+1000\s+1000$/m);
    assert.match(status, /^Gid:\s+1000\s+1000\s+1000\s+1000$/m);
    const root = readFileSync(`/proc/${pid}/mountinfo`, "utf8")
      .split("\n")
      .map((line) => line.split(" "))
      .find((fields) => fields[4] === "/");
    assert.ok(root, "the process has a root mount");
    assert.ok((root[5] ?? "").split(",").includes("ro"), `the root is mounted read-only: ${root.join(" ")}`);
  });

  it("answers /readyz and leads through its Lease", async () => {
    await waitFor("/readyz 200", async () => {
      assert.equal(operator?.exitCode, null, `buildah run exited:\n${logs()}`);
      const res = await fetch(`http://127.0.0.1:${probePort}/readyz`).catch(() => undefined);
      return res?.status === 200 || undefined;
    });
    await waitFor("leading", async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return (
        /^leader_election_master_status\{name="cocoon-operator\.cocoonset\.cocoonstack\.io"\} 1$/m.test(
          text,
        ) || undefined
      );
    });
  });

  it("brings a CocoonSet to Running", async () => {
    const ns = "image-test";
    const res = await apiRequest(cp, "POST", "/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: ns },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    await createSet(cp, ns, "demo", {});
    await waitRunning(cp, ns, "demo", 1, 0, 90_000).catch((err: Error) =>
      assert.fail(`${err.message}; operator output:\n${logs()}`),
    );
  });

  it("stops cleanly on SIGTERM", async () => {
    process.kill(pid, "SIGTERM");
    await waitFor(
      "the entrypoint's process to exit",
      async () => operatorPid(imageConfig().Entrypoint) === undefined || undefined,
    );
    await exited;
    assert.match(output.join(""), /"msg":"Manager stopped"/);
  });
});
