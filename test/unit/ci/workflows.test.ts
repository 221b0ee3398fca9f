// The GitHub Actions workflows (.github/workflows): actionlint (built at its pinned version by
// test/env/actionlint/build.sh, with shellcheck on the run: scripts when it is installed) finds
// nothing in them, and they do what docs/releasing.md says: CI runs .ci/run; a version tag pushes the
// multi-arch image with an SBOM, builds the plugin with `make plugin`, and publishes a release with
// checksums and notes.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { before, describe, it } from "node:test";
import { parse } from "yaml";

const repoRoot = resolve(import.meta.dirname, "../../..");
const workflow = (name: string) => parse(readFileSync(join(repoRoot, ".github/workflows", name), "utf8"));

interface Step {
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
}

const steps = (job: { steps: Step[] }) => job.steps;
const runs = (job: { steps: Step[] }) =>
  steps(job)
    .map((s) => s.run ?? "")
    .join("\n");

describe("the GitHub Actions workflows", () => {
  let actionlint: string;
  before(() => {
    actionlint = execFileSync(join(repoRoot, "test/env/actionlint/build.sh"), { encoding: "utf8" }).trim();
  });

  it("actionlint finds nothing in .github/workflows", () => {
    const lint = spawnSync(actionlint, ["-no-color", "-oneline"], { cwd: repoRoot, encoding: "utf8" });
    assert.equal(lint.status, 0, `${lint.stdout}${lint.stderr}`);
  });

  it("actionlint does report a broken workflow (a job without runs-on, an unknown key)", () => {
    const broken = "on: push\njobs:\n  x:\n    stepz: []\n    steps:\n      - run: echo hi\n";
    const lint = spawnSync(actionlint, ["-no-color", "-oneline", "-"], { input: broken, encoding: "utf8" });
    assert.equal(lint.status, 1, lint.stdout);
    assert.match(lint.stdout, /runs-on/);
    assert.match(lint.stdout, /stepz/);
  });

  it("CI runs .ci/run, the entry a fresh machine runs, with the test environment cached", () => {
    const { jobs, on } = workflow("ci.yml");
    assert.ok(on.pull_request !== undefined && on.push.branches.includes("main"));
    const test = jobs.test;
    assert.match(runs(test), /bash \.ci\/run/);
    assert.ok(test["timeout-minutes"] <= 90);
    const cache = steps(test).find((s) => s.uses?.startsWith("actions/cache@"));
    assert.match(String(cache?.with?.path), /^~\/\.cache\/cocoon-operator$/m);
  });

  it("a version tag pushes the multi-arch image with an SBOM, builds the plugin with make plugin, and releases with checksums and notes", () => {
    const { on, jobs } = workflow("release.yml");
    assert.deepEqual(on.push.tags, ["v*.*.*"]);
    const build = steps(jobs.image).find((s) => s.uses?.startsWith("docker/build-push-action@"));
    assert.equal(build?.with?.platforms, "linux/amd64,linux/arm64");
    assert.equal(build?.with?.push, true);
    assert.equal(build?.with?.sbom, true);
    assert.ok(steps(jobs.image).some((s) => s.uses?.startsWith("anchore/sbom-action@")));
    assert.match(runs(jobs.plugin), /^make plugin /m);
    assert.match(runs(jobs.plugin), /sha256sum/, "the krew manifest's sha256 is checked against the archive");
    assert.deepEqual(jobs.release.needs, ["image", "plugin"]);
    assert.match(runs(jobs.release), /sha256sum -- \* > checksums\.txt/);
    assert.match(runs(jobs.release), /gh release create "\$TAG" --verify-tag .*--generate-notes/);
    assert.equal(jobs.release.permissions.contents, "write");
  });
});
