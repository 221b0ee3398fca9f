// A long-lived test environment for working by hand: `npm run sandbox -- up|down|status`.
// `up` starts this file again as a detached `serve` process that runs the control plane, the
// registry and the vk-cocoon simulator until `down` sends it SIGTERM. The files in .sandbox/ tell clients where things are.
import { spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { kubeconfigYaml } from "./controlplane.ts";
import { type Environment, startEnvironment } from "./environment.ts";
import { probeHealthy } from "./kubeapi.ts";
import { type SimNodeOptions, type Simulator, startSimulator } from "./simulator/index.ts";
import type { TestEnvInfo } from "./testenv.ts";

const repoRoot = resolve(import.meta.dirname, "../..");
const sandboxDir = join(repoRoot, ".sandbox");
const files = {
  pid: join(sandboxDir, "pid"),
  log: join(sandboxDir, "sandbox.log"),
  env: join(sandboxDir, "env.json"),
  kubeconfig: join(sandboxDir, "kubeconfig"),
  registry: join(sandboxDir, "registry"),
  ca: join(sandboxDir, "ca.crt"),
  kubectl: join(sandboxDir, "kubectl"),
};
const startTimeoutMs = 180_000;

function runningPid(): number | undefined {
  if (!existsSync(files.pid)) return undefined;
  const pid = Number(readFileSync(files.pid, "utf8").trim());
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

function removeStateFiles(): void {
  for (const file of [files.pid, files.env, files.kubeconfig, files.registry, files.ca, files.kubectl])
    rmSync(file, { force: true });
}

function usage(info: TestEnvInfo): string {
  return [
    `sandbox is up: apiserver ${info.server}, registry ${info.registry}`,
    `  kubectl:           export KUBECONFIG=${files.kubeconfig}; ${files.kubectl} get pods -A`,
    `  registry:          ${info.registry}  (plain HTTP; also in ${files.registry})`,
    `  integration tests: npx node --test test/integration/…  (they read ${files.env})`,
    "  stop:              npm run sandbox -- down",
  ].join("\n");
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function up(): Promise<number> {
  const existing = runningPid();
  if (existing !== undefined && existsSync(files.env)) {
    process.stdout.write(`${usage(JSON.parse(readFileSync(files.env, "utf8")))}\n`);
    return 0;
  }
  if (existing !== undefined) {
    process.stderr.write(`sandbox process ${existing} is still starting or stuck; run \`down\` first\n`);
    return 1;
  }
  mkdirSync(sandboxDir, { recursive: true });
  removeStateFiles();
  const log = openSync(files.log, "w");
  const child = spawn(process.execPath, [import.meta.filename, "serve"], {
    cwd: repoRoot,
    detached: true,
    stdio: ["ignore", log, log],
  });
  child.unref();
  writeFileSync(files.pid, `${child.pid}\n`);
  const deadline = Date.now() + startTimeoutMs;
  while (!existsSync(files.env)) {
    if (runningPid() === undefined || Date.now() > deadline) {
      process.stderr.write(
        `sandbox failed to start; log ${files.log}:\n${readFileSync(files.log, "utf8")}\n`,
      );
      await down();
      return 1;
    }
    await sleep(200);
  }
  process.stdout.write(`${usage(JSON.parse(readFileSync(files.env, "utf8")))}\n`);
  return 0;
}

async function down(): Promise<number> {
  const pid = runningPid();
  if (pid !== undefined) {
    process.kill(pid, "SIGTERM");
    const deadline = Date.now() + 30_000;
    while (runningPid() !== undefined && Date.now() < deadline) await sleep(200);
    // Last resort for a serve process that ignores SIGTERM (its daemons would then outlive it).
    if (runningPid() !== undefined) process.kill(pid, "SIGKILL");
  }
  removeStateFiles();
  process.stdout.write(pid === undefined ? "sandbox was not running\n" : "sandbox stopped\n");
  return 0;
}

async function status(): Promise<number> {
  const pid = runningPid();
  if (pid === undefined || !existsSync(files.env)) {
    process.stdout.write(pid === undefined ? "sandbox is down\n" : `sandbox process ${pid} is starting\n`);
    return pid === undefined ? 1 : 0;
  }
  const info: TestEnvInfo = JSON.parse(readFileSync(files.env, "utf8"));
  const ready = await probeHealthy(`${info.server}/readyz`);
  process.stdout.write(
    `sandbox process ${pid}; apiserver ${ready ? "ready" : "NOT ready"}\n${usage(info)}\n`,
  );
  return ready ? 0 : 1;
}

/** Publishes the environment under .sandbox/; env.json is written last (atomically): it means ready. */
function publish(environment: Environment): void {
  const { info } = environment;
  copyFileSync(info.caFile, files.ca);
  const published: TestEnvInfo = { ...info, caFile: files.ca, kubeconfigPath: files.kubeconfig };
  writeFileSync(files.kubeconfig, kubeconfigYaml(published), { mode: 0o600 });
  writeFileSync(files.registry, `${info.registry}\n`);
  // The kubectl built with the control plane (the system one, if any, may be too old).
  symlinkSync(join(environment.controlPlane.binDir, "kubectl"), files.kubectl);
  writeFileSync(`${files.env}.tmp`, `${JSON.stringify(published, null, 2)}\n`);
  renameSync(`${files.env}.tmp`, files.env);
}

/** Two simulated vk-cocoon nodes in the default pool, so the reference samples schedule as they are. */
const SANDBOX_NODES: SimNodeOptions[] = [
  { name: "cocoon-pool", pool: "default", pods: 32 },
  { name: "cocoon-pool-2", pool: "default", pods: 32 },
];

async function serve(): Promise<void> {
  const environment = await startEnvironment();
  let simulator: Simulator | undefined;
  try {
    simulator = await startSimulator({ ...environment.info, nodes: SANDBOX_NODES });
    publish(environment);
  } catch (err) {
    await simulator?.stop({ removeNodes: true });
    await environment.stop();
    throw err;
  }
  process.stdout.write(`ready in ${environment.controlPlane.startupMs} ms\n`);
  // The child processes alone would keep the event loop alive; this makes it explicit.
  const keepAlive = setInterval(() => {}, 60_000);
  const shutdown = async (): Promise<void> => {
    clearInterval(keepAlive);
    await simulator.stop({ removeNodes: true });
    await environment.stop();
    removeStateFiles();
    process.exit(0);
  };
  process.once("SIGTERM", () => void shutdown());
  process.once("SIGINT", () => void shutdown());
}

const commands: Record<string, () => Promise<number>> = { up, down, status };
const command = process.argv[2] ?? "";
if (command === "serve") {
  await serve();
} else {
  const run = commands[command];
  if (!run) {
    process.stderr.write("usage: npm run sandbox -- up|down|status\n");
    process.exitCode = 2;
  } else {
    process.exitCode = await run();
  }
}
