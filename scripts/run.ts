// `make run` (npm run run): runs the operator.
// - With a kubeconfig context (KUBECONFIG, or ~/.kube/config with a current-context): the operator
//   runs against that cluster with your environment (OCI_REGISTRY must be set).
// - Otherwise: starts the sandbox (control plane, registry, vk-cocoon simulator), runs the operator
//   against it, applies config/samples/test-cocoonset.yaml and walks it Running → Suspended →
//   Running, printing each phase with timings; then keeps running until Ctrl-C, which stops the
//   operator and (if this run started it) the sandbox.
// Extra arguments are passed to the operator: `npm run run -- --cocoonset-concurrency=8`.

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, openSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join, relative, resolve } from "node:path";
import { parse } from "yaml";
import type { CocoonSet } from "../src/apis/v1/types.ts";
import { KubeClient, kubeConfigFromFile } from "../src/controller/client.ts";
import { isAlreadyExists } from "../src/controller/errors.ts";
import { COCOONSETS } from "../src/controller/resources.ts";

const repoRoot = resolve(import.meta.dirname, "..");
const sandboxDir = join(repoRoot, ".sandbox");
const sandboxScript = join(repoRoot, "test/env/sandbox.ts");
const sandboxKubeconfig = join(sandboxDir, "kubeconfig");
const operatorLog = join(sandboxDir, "operator.log");
const samplePath = join(repoRoot, "config/samples/test-cocoonset.yaml");
const mainScript = join(repoRoot, "src/main.ts");
/** The Node flags the image and `npm start` run the operator with (see the Dockerfile). */
const OPERATOR_NODE_FLAGS = ["--max-semi-space-size=1"];
const PHASE_TIMEOUT_MS = 180_000;
const POLL_MS = 200;
/** The operator's own shutdown deadline plus the lease release, with room to spare. */
const OPERATOR_STOP_WAIT_MS = 40_000;

const say = (line: string): void => void process.stdout.write(`${line}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The kubeconfig files kubectl would read and their current context, if one is set. */
function currentContext(env: NodeJS.ProcessEnv): { files: string[]; context: string } | undefined {
  const files = env.KUBECONFIG
    ? env.KUBECONFIG.split(delimiter).filter(Boolean)
    : [join(homedir(), ".kube", "config")];
  for (const file of files) {
    if (!existsSync(file)) continue;
    const doc = parse(readFileSync(file, "utf8")) as { "current-context"?: string } | null;
    const context = doc?.["current-context"];
    if (context) return { files, context };
  }
  return undefined;
}

/**
 * Starts `node src/main.ts` in its own process group, so a Ctrl-C reaches this script alone and the
 * operator gets exactly one SIGTERM from it (a second signal would make the operator skip draining).
 */
function startOperator(args: string[], env: NodeJS.ProcessEnv, logFile?: string): ChildProcess {
  const out = logFile ? openSync(logFile, "w") : "inherit";
  const child = spawn(process.execPath, [...OPERATOR_NODE_FLAGS, mainScript, ...args], {
    cwd: repoRoot,
    env,
    detached: true,
    stdio: ["ignore", out, out],
  });
  process.once("exit", () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  });
  return child;
}

function exited(child: ChildProcess): Promise<number> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode ?? 1);
  return new Promise((done) => child.once("exit", (code) => done(code ?? 1)));
}

/** Resolves with the signal's name on the first SIGINT or SIGTERM. */
function interrupted(): Promise<NodeJS.Signals> {
  return new Promise((done) => {
    process.once("SIGINT", () => done("SIGINT"));
    process.once("SIGTERM", () => done("SIGTERM"));
  });
}

async function stopOperator(child: ChildProcess): Promise<number> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode ?? 1;
  child.kill("SIGTERM");
  const code = await Promise.race([exited(child), sleep(OPERATOR_STOP_WAIT_MS).then(() => undefined)]);
  if (code !== undefined) return code;
  say("operator did not stop in time; killing it");
  child.kill("SIGKILL");
  return exited(child);
}

async function runAgainstCluster(context: string, files: string[], args: string[]): Promise<number> {
  if (!process.env.OCI_REGISTRY) {
    process.stderr.write(
      `kubeconfig context "${context}" found (${files.join(delimiter)}), but OCI_REGISTRY is not set.\n` +
        "Set it to the registry your snapshots live in, e.g.\n" +
        "  OCI_REGISTRY=REGION-docker.pkg.dev/PROJECT/REPO make run\n" +
        "or unset KUBECONFIG (and move ~/.kube/config aside) to run against the local sandbox.\n",
    );
    return 1;
  }
  // Out of a pod the lease namespace must be named; a deployed operator uses cocoon-system, so a
  // local run waits behind it instead of fighting it.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    POD_NAMESPACE: process.env.POD_NAMESPACE || "cocoon-system",
  };
  say(`running the operator against kubeconfig context "${context}" (Ctrl-C stops it)`);
  say(
    `leader election uses a Lease in namespace ${env.POD_NAMESPACE}; \`npm run run -- --leader-elect=false\` skips it`,
  );
  const operator = startOperator(args, env);
  const outcome = await Promise.race([exited(operator), interrupted()]);
  if (typeof outcome === "number") return outcome;
  say(`${outcome}: stopping the operator`);
  return stopOperator(operator);
}

function sandboxUp(): boolean {
  return (
    spawnSync(process.execPath, [sandboxScript, "status"], { cwd: repoRoot, stdio: "ignore" }).status === 0
  );
}

function sandbox(command: "up" | "down"): void {
  const result = spawnSync(process.execPath, [sandboxScript, command], { cwd: repoRoot, stdio: "inherit" });
  if (result.status !== 0) throw new Error(`npm run sandbox -- ${command} failed`);
}

function logTail(lines: number): string {
  if (!existsSync(operatorLog)) return "";
  return readFileSync(operatorLog, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
}

/** Prints the set's phase (and readiness) each time it changes, until the phase is `want`. */
async function follow(client: KubeClient, ns: string, name: string, want: string, t0: number): Promise<void> {
  const deadline = Date.now() + PHASE_TIMEOUT_MS;
  let last = "";
  for (;;) {
    const cs = await client.get<CocoonSet>(COCOONSETS, ns, name);
    const status = cs.status;
    const phase = status?.phase || "(none)";
    const summary = `phase ${phase.padEnd(10)} agents ${status?.readyAgents ?? 0}/${status?.desiredAgents ?? "?"} ready`;
    if (summary !== last) {
      say(`  ${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s  ${summary}`);
      last = summary;
    }
    if (phase === want && (status?.observedGeneration ?? 0) >= (cs.metadata.generation ?? 0)) return;
    if (Date.now() > deadline)
      throw new Error(`${ns}/${name} did not reach ${want} within ${PHASE_TIMEOUT_MS / 1000} s`);
    await sleep(POLL_MS);
  }
}

/** Creates the sample set, or brings an existing one back to the sample's spec (unsuspended). */
async function applySample(client: KubeClient): Promise<CocoonSet> {
  const sample = parse(readFileSync(samplePath, "utf8")) as CocoonSet;
  const ns = sample.metadata.namespace ?? "default";
  const name = sample.metadata.name ?? "";
  try {
    return await client.create<CocoonSet>(COCOONSETS, ns, sample);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    return client.patch<CocoonSet>(COCOONSETS, ns, name, { spec: { ...sample.spec, suspend: false } });
  }
}

async function demo(client: KubeClient): Promise<void> {
  const cs = await applySample(client);
  const ns = cs.metadata.namespace ?? "default";
  const name = cs.metadata.name ?? "";
  const steps: { title: string; suspend?: boolean; want: string }[] = [
    {
      title: `applied ${relative(repoRoot, samplePath)} (${ns}/${name}); waiting for Running`,
      want: "Running",
    },
    { title: "suspending: spec.suspend=true", suspend: true, want: "Suspended" },
    { title: "resuming: spec.suspend=false", suspend: false, want: "Running" },
  ];
  for (const step of steps) {
    const t0 = Date.now();
    if (step.suspend !== undefined) {
      await client.patch(COCOONSETS, ns, name, { spec: { suspend: step.suspend } });
    }
    say(`\n${step.title}`);
    await follow(client, ns, name, step.want, t0);
    say(`  ${step.want} after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
}

async function runInSandbox(args: string[]): Promise<number> {
  const startedSandbox = !sandboxUp();
  if (startedSandbox) {
    say("no kubeconfig context: starting the sandbox (control plane, registry, vk-cocoon simulator)");
    sandbox("up");
  } else {
    say("using the sandbox that is already up");
  }
  const env = JSON.parse(readFileSync(join(sandboxDir, "env.json"), "utf8")) as { registry: string };
  const operator = startOperator(
    ["--leader-elect=false", ...args],
    { ...process.env, KUBECONFIG: sandboxKubeconfig, OCI_REGISTRY: env.registry },
    operatorLog,
  );
  say(`operator started (pid ${operator.pid}); its JSON logs go to ${relative(repoRoot, operatorLog)}`);

  const client = new KubeClient(kubeConfigFromFile(sandboxKubeconfig));
  const stopping = interrupted();
  let code = 0;
  try {
    const outcome = await Promise.race([
      demo(client).then(() => "done" as const),
      exited(operator).then((c) => ({ exit: c })),
      stopping,
    ]);
    if (typeof outcome === "object") throw new Error(`the operator exited with code ${outcome.exit}`);
    if (outcome === "done") {
      say(
        [
          "",
          "The operator keeps running against the sandbox. Try:",
          `  export KUBECONFIG=${relative(repoRoot, sandboxKubeconfig)}; .sandbox/kubectl get cocoon,pods -A`,
          `  tail -f ${relative(repoRoot, operatorLog)}`,
          `Ctrl-C stops the operator${startedSandbox ? " and the sandbox." : " (the sandbox stays up)."}`,
        ].join("\n"),
      );
      const after = await Promise.race([exited(operator).then((c) => ({ exit: c })), stopping]);
      if (typeof after === "object") throw new Error(`the operator exited with code ${after.exit}`);
    }
  } catch (err) {
    code = 1;
    process.stderr.write(`\n${(err as Error).message}\nlast operator log lines:\n${logTail(20)}\n`);
  } finally {
    client.close();
    say("stopping the operator");
    const operatorCode = await stopOperator(operator);
    if (operatorCode !== 0 && code === 0) code = operatorCode;
    if (startedSandbox) sandbox("down");
  }
  return code;
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const found = currentContext(process.env);
  const isSandbox = found?.files.length === 1 && resolve(found.files[0] ?? "") === sandboxKubeconfig;
  if (found && !isSandbox) return runAgainstCluster(found.context, found.files, args);
  return runInSandbox(args);
}

process.exitCode = await main();
