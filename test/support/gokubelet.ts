// The real kubelet's exec endpoint (test/env/gokubelet: k8s.io/kubelet's streaming remotecommand
// behind a small Go main), built by its build.sh from the control plane's Go module and cached like
// the control plane binaries, and started on a loopback address.

import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { selfSignedCertificate } from "../env/certs.ts";
import { repoRoot } from "./build.ts";

/** The binary's path: test/env/gokubelet/build.sh builds it unless the cache holds it (`make testenv` does). */
export function goKubeletBinary(): string {
  return execFileSync(join(repoRoot, "test/env/gokubelet/build.sh"), { encoding: "utf8" }).trim();
}

export interface GoKubelet {
  port: number;
  stop(): void;
}

/** Starts the kubelet exec endpoint on `host` with a self-signed certificate. */
export async function startGoKubelet(host: string): Promise<GoKubelet> {
  const bin = goKubeletBinary();
  const dir = mkdtempSync(join(tmpdir(), "cocoon-gokubelet-tls-"));
  const cert = selfSignedCertificate(dir, "kubelet", { subject: "/CN=gokubelet", altNames: `IP:${host}` });
  const child = spawn(bin, ["-addr", `${host}:0`, "-cert", cert.certFile, "-key", cert.keyFile], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const firstLine = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`gokubelet exited with ${code}`)));
  });
  return {
    port: Number(firstLine),
    stop() {
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
