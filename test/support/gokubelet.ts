// The real kubelet's exec endpoint (test/env/gokubelet: k8s.io/kubelet's streaming remotecommand
// behind a small Go main), built once from the control plane's Go module and cached like the control
// plane binaries, and started on a loopback address.

import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { selfSignedCertificate } from "../env/certs.ts";
import { repoRoot } from "./build.ts";

const sourceDir = join(repoRoot, "test/env/gokubelet");
const moduleDir = join(repoRoot, "test/env/controlplane/k8s");

/** Builds the binary unless the cache holds one for these sources; returns its path. */
export function goKubeletBinary(): string {
  const sources = [join(sourceDir, "main.go"), join(moduleDir, "go.mod"), join(moduleDir, "go.sum")];
  const hash = createHash("sha256");
  for (const file of sources) hash.update(readFileSync(file));
  const cache =
    process.env.COCOON_TESTENV_CACHE ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "cocoon-operator/testenv");
  const bin = join(cache, `gokubelet-${hash.digest("hex").slice(0, 16)}`);
  if (existsSync(bin)) return bin;
  const work = mkdtempSync(join(tmpdir(), "cocoon-gokubelet-"));
  try {
    for (const file of sources) copyFileSync(file, join(work, file.split("/").at(-1)!));
    execFileSync("go", ["build", "-o", "gokubelet", "."], {
      cwd: work,
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod", CGO_ENABLED: "0" },
    });
    mkdirSync(cache, { recursive: true });
    renameSync(join(work, "gokubelet"), bin);
    return bin;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
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
