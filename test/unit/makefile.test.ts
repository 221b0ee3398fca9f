// The Makefile targets an upstream contributor types (upstream's `make all`, `lint`, `help`,
// `import-crds`), checked with `make -n` so nothing runs.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

const root = join(import.meta.dirname, "..", "..");
const make = (...args: string[]) =>
  execFileSync("make", ["--no-print-directory", ...args], { cwd: root, encoding: "utf8" });
/** The commands `make -n target` would run, minus the set-up every target shares (deps, the test tools). */
const commands = (target: string) =>
  make("-n", target)
    .split("\n")
    .filter(
      (l) => l && !/npm ci|deps-stamp|node --version|(controlplane|actionlint|gokubelet)\/build\.sh/.test(l),
    );

describe("Makefile", () => {
  it("help lists every phony target with its description", () => {
    const phony =
      /^\.PHONY: (.*)$/m.exec(readFileSync(join(root, "Makefile"), "utf8"))?.[1]?.split(/\s+/) ?? [];
    const listed = make("help")
      .split("\n")
      .slice(1)
      .map((l) => /^\s+(\S+)\s+\S/.exec(l)?.[1])
      .filter(Boolean);
    for (const target of ["all", "help", "lint", "build", "test", "run", "import-crds"]) {
      assert.ok(phony.includes(target), `${target} is phony`);
    }
    assert.deepEqual([...listed].sort(), [...phony].sort());
  });

  it("lint typechecks and runs biome", () => {
    assert.deepEqual(commands("lint"), ["npm run typecheck", "npm run lint"]);
  });

  it("all lints, builds, then tests", () => {
    assert.deepEqual(commands("all"), ["npm run typecheck", "npm run lint", "npm run build", "npm test"]);
  });

  it("build compiles dist/", () => {
    assert.deepEqual(commands("build"), ["npm run build"]);
  });

  it("sdk packs the SDK through its npm script", () => {
    assert.deepEqual(commands("sdk"), ["npm run sdk"]);
  });

  it("import-crds regenerates config/crd/bases from src/apis", () => {
    assert.deepEqual(commands("import-crds"), ["npm run gen:crds"]);
  });
});
