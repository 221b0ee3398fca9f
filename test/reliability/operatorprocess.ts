// The operator as a real child process (`node src/main.ts`, leader election off), so SIGKILL is real.
// Its kubeconfig points at an ApiProxy that scopes it to one namespace; OCI_REGISTRY at a RegistryProxy.
// Everything it writes goes into the held log (test/support/testlog.ts), so a failed test shows it.

import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { testLog } from "../support/testlog.ts";

const repoRoot = resolve(import.meta.dirname, "../..");

export interface OperatorProcessOptions {
  kubeconfigPath: string;
  registry: string;
  /** Every line the operator writes (stdout and stderr), tagged with its incarnation. */
  onLine?: (incarnation: number, line: string) => void;
}

export class OperatorProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  incarnation = 0;
  kills = 0;
  /** Exits the test did not cause (a crash): incarnation and code. */
  readonly unexpectedExits: { incarnation: number; code: number | null; signal: string | null }[] = [];
  private readonly opts: OperatorProcessOptions;

  constructor(opts: OperatorProcessOptions) {
    this.opts = opts;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  start(): void {
    if (this.child) throw new Error("operator already running");
    const incarnation = ++this.incarnation;
    const child = spawn(
      process.execPath,
      ["src/main.ts", "--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0"],
      {
        cwd: repoRoot,
        env: {
          ...process.env,
          KUBECONFIG: this.opts.kubeconfigPath,
          OCI_REGISTRY: this.opts.registry,
          OPERATOR_LOG_LEVEL: "info",
          // The registry proxy is plain http on loopback; no docker config to read.
          DOCKER_CONFIG: "/nonexistent",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    this.child = child;
    let expected = false;
    (child as ChildProcess & { expectedExit?: () => void }).expectedExit = () => {
      expected = true;
    };
    for (const stream of [child.stdout, child.stderr]) {
      let buffered = "";
      stream?.setEncoding("utf8");
      stream?.on("data", (chunk: string) => {
        buffered += chunk;
        let nl = buffered.indexOf("\n");
        while (nl >= 0) {
          const line = buffered.slice(0, nl);
          testLog.write(`[operator #${incarnation}] ${line}\n`);
          this.opts.onLine?.(incarnation, line);
          buffered = buffered.slice(nl + 1);
          nl = buffered.indexOf("\n");
        }
      });
    }
    this.exited = new Promise((done) => {
      child.once("exit", (code, signal) => {
        if (!expected) this.unexpectedExits.push({ incarnation, code, signal });
        if (this.child === child) this.child = undefined;
        done();
      });
    });
  }

  /** SIGKILL and wait for the exit. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    (child as ChildProcess & { expectedExit?: () => void }).expectedExit?.();
    this.kills++;
    child.kill("SIGKILL");
    await this.exited;
  }

  /** SIGTERM (clean shutdown), SIGKILL after 10 s. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    (child as ChildProcess & { expectedExit?: () => void }).expectedExit?.();
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}
