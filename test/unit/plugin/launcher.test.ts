// bin/kubectl-cocoon and bin/kubectl_complete-cocoon as krew lays them out: linked from another
// directory, the bundle in lib/. They run under a plain POSIX sh, follow relative symlinks without
// GNU readlink -f, and refuse a Node older than 24 with a message instead of its SyntaxError.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";

const repoRoot = resolve(import.meta.dirname, "../../..");
const LAUNCHERS = ["kubectl-cocoon", "kubectl_complete-cocoon"];
let dir: string;

/** A node that only answers --version, as an old one on PATH would first be asked. */
function fakeNode(at: string, version: string): void {
  mkdirSync(at, { recursive: true });
  writeFileSync(join(at, "node"), `#!/bin/sh\n[ "$1" = --version ] && echo ${version} && exit 0\nexit 9\n`);
  chmodSync(join(at, "node"), 0o755);
}

before(() => {
  dir = mkdtempSync(join(tmpdir(), "cocoon-launcher-"));
  const store = join(dir, "store/cocoon/v1");
  mkdirSync(join(store, "bin"), { recursive: true });
  mkdirSync(join(store, "lib"));
  for (const launcher of LAUNCHERS) {
    copyFileSync(join(repoRoot, "bin", launcher), join(store, "bin", launcher));
    chmodSync(join(store, "bin", launcher), 0o755);
  }
  // Stands in for the bundle: shows which Node ran it and with what.
  writeFileSync(
    join(store, "lib/kubectl-cocoon.mjs"),
    'console.log(JSON.stringify({ major: Number(process.versions.node.split(".")[0]), args: process.argv.slice(2) }));\n',
  );
  // krew's layout: KREW_ROOT/bin/kubectl-cocoon -> ../store/cocoon/v1/bin/kubectl-cocoon.
  mkdirSync(join(dir, "bin"));
  for (const launcher of LAUNCHERS)
    symlinkSync(`../store/cocoon/v1/bin/${launcher}`, join(dir, "bin", launcher));
  mkdirSync(join(dir, "node24"));
  symlinkSync(process.execPath, join(dir, "node24/node"));
  fakeNode(join(dir, "node20"), "v20.11.1");
});
after(() => rmSync(dir, { recursive: true, force: true }));

function launch(launcher: string, path: string, args: string[]) {
  return spawnSync("sh", [join(dir, "bin", launcher), ...args], {
    encoding: "utf8",
    env: { PATH: `${path}:/usr/bin:/bin` },
  });
}

describe("the kubectl-cocoon launchers", () => {
  it("run the bundle beside them with the Node 24 on PATH, through a relative symlink", () => {
    const run = launch("kubectl-cocoon", join(dir, "node24"), ["status", "demo"]);
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { major: 24, args: ["status", "demo"] });
  });

  it("the completion launcher hands kubectl's words to the plugin's __complete", () => {
    const run = launch("kubectl_complete-cocoon", join(dir, "node24"), ["suspend", ""]);
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout).args, ["__complete", "suspend", ""]);
  });

  it("refuse an older node first on PATH, naming it and what is needed", () => {
    const run = launch("kubectl-cocoon", join(dir, "node20"), ["status", "demo"]);
    assert.equal(run.status, 1);
    assert.equal(run.stdout, "");
    assert.equal(
      run.stderr,
      `kubectl-cocoon needs Node.js 24 or later; ${join(dir, "node20/node")} is v20.11.1: put a newer node first on PATH\n`,
    );
  });

  it("use no GNU-only readlink -f", () => {
    for (const launcher of LAUNCHERS) {
      assert.doesNotMatch(readFileSync(join(repoRoot, "bin", launcher), "utf8"), /readlink\s+-f/);
    }
  });
});
