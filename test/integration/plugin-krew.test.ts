// kubectl cocoon as a user installs it: `make plugin`'s archive and manifest installed by the real
// krew (built from its Go module, test/env/krew/build.sh) into a temporary KREW_ROOT, then run as
// `kubectl cocoon` with a PATH that holds no checkout: only krew's bin/, a Node 24 and kubectl.

import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { parse } from "yaml";
import { buildPluginRelease, type PluginRelease } from "../../scripts/plugin.ts";
import { controlPlaneBinDir } from "../env/controlplane.ts";
import { createNamespace, testEnv } from "../env/testenv.ts";
import { createMainOnlySet } from "../support/setapi.ts";

const repoRoot = resolve(import.meta.dirname, "../..");
const env = testEnv();
let dir: string;
let krewBin: string;
let release: PluginRelease;

function run(file: string, args: string[], runEnv: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(file, args, { env: runEnv, cwd: dir, timeout: 60_000 }, (err, stdout, stderr) => {
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "cocoon-krew-"));
  krewBin = execFileSync(join(repoRoot, "test/env/krew/build.sh"), { encoding: "utf8" }).trim();
  release = await buildPluginRelease(join(dir, "out"), "v0.0.1-test", "https://example.invalid/releases");
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe("make plugin's krew archive and manifest", () => {
  it("writes the archive's real sha256 and the release uri into the manifest", () => {
    const manifest = parse(readFileSync(release.manifest, "utf8")) as {
      spec: { version: string; platforms: { uri: string; sha256: string }[] };
    };
    const sha = execFileSync("sha256sum", [release.archive], { encoding: "utf8" }).split(" ")[0];
    assert.equal(manifest.spec.version, "v0.0.1-test");
    for (const platform of manifest.spec.platforms) {
      assert.equal(platform.sha256, sha);
      assert.equal(
        platform.uri,
        "https://example.invalid/releases/v0.0.1-test/kubectl-cocoon-v0.0.1-test.tar.gz",
      );
    }
  });

  it("the manifest written and the one in the repository pass krew's own validation", () => {
    const validate = join(krewBin, "validate-krew-manifest");
    for (const manifest of [release.manifest, join(repoRoot, "plugins/krew/cocoon.yaml")]) {
      // Exits non-zero (and execFileSync throws) on a manifest krew refuses.
      execFileSync(validate, ["-manifest", manifest, "-skip-install"], { stdio: ["ignore", "pipe", "pipe"] });
    }
  });

  it("installs with krew and runs as kubectl cocoon --help and status from a PATH without a checkout", {
    timeout: 120_000,
  }, async () => {
    const krewRoot = join(dir, "krew");
    const nodeDir = join(dir, "node24");
    mkdirSync(nodeDir);
    symlinkSync(process.execPath, join(nodeDir, "node"));
    const kubectlDir = join(dir, "kubectl");
    mkdirSync(kubectlDir);
    symlinkSync(join(controlPlaneBinDir(), "kubectl"), join(kubectlDir, "kubectl"));
    symlinkSync(join(krewBin, "kubectl-krew"), join(kubectlDir, "kubectl-krew"));
    const kubeconfig = join(dir, "kubeconfig");
    writeFileSync(kubeconfig, readFileSync(env.kubeconfigPath));
    const userEnv = {
      HOME: dir,
      KREW_ROOT: krewRoot,
      KUBECONFIG: kubeconfig,
      OCI_REGISTRY: env.registry,
      PATH: [join(krewRoot, "bin"), nodeDir, kubectlDir, "/usr/bin", "/bin"].join(delimiter),
    };
    const kubectl = join(kubectlDir, "kubectl");
    const installed = await run(
      kubectl,
      ["krew", "install", `--manifest=${release.manifest}`, `--archive=${release.archive}`],
      userEnv,
    );
    assert.equal(installed.code, 0, installed.stderr);

    const help = await run(kubectl, ["cocoon", "--help"], userEnv);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^kubectl cocoon: /);

    const ns = await createNamespace(env, "krew");
    await createMainOnlySet(env, ns, "krew-pool", "solo");
    const status = await run(kubectl, ["cocoon", "-n", ns, "status", "solo"], userEnv);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`^Name: +solo\\nNamespace: +${ns}\\n`));
    assert.match(status.stdout, /^0 +main +<none> /m);
    assert.doesNotMatch(`${help.stderr}${status.stderr}`, /ExperimentalWarning|Type Stripping/);
  });
});
