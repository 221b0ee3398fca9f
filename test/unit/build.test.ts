// The compiled build: tsconfig.build.json emits one JavaScript module per source
// module, the emitted modules import JavaScript only, and the image's entry point runs on Node with
// type stripping switched off.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { globSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { usage } from "../../src/config.ts";
import { buildImageLayout, IMAGE_NODE_FLAGS, repoRoot } from "../support/build.ts";

let dir: string;
let mainJs: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), "cocoon-build-"));
  mainJs = buildImageLayout(dir);
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** Relative module specifiers of static imports, re-exports and dynamic imports. */
function relativeSpecifiers(js: string): string[] {
  const found = js.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)"(\.{1,2}\/[^"]+)"/g);
  return [...found].map((m) => m[1] as string);
}

describe("npm run build (tsconfig.build.json)", () => {
  it("emits dist/<path>.js for every module under src/ and nothing else", () => {
    const sources = globSync("**/*.ts", { cwd: join(repoRoot, "src") }).map((f) => f.replace(/\.ts$/, ".js"));
    const emitted = globSync("**/*", { cwd: join(dir, "dist"), withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name).slice(join(dir, "dist").length + 1));
    assert.deepEqual(emitted.sort(), sources.sort());
  });

  it("rewrites every relative import to a .js module that exists (or the package.json beside dist/)", () => {
    let checked = 0;
    for (const file of globSync("**/*.js", { cwd: join(dir, "dist") })) {
      const js = readFileSync(join(dir, "dist", file), "utf8");
      for (const specifier of relativeSpecifiers(js)) {
        assert.ok(
          specifier.endsWith(".js") || specifier === "../package.json",
          `${file} imports ${specifier}`,
        );
        const target = join(dir, "dist", file, "..", specifier);
        assert.doesNotThrow(() => readFileSync(target), `${file} imports missing ${specifier}`);
        checked++;
      }
    }
    assert.ok(
      checked > 100,
      `only ${checked} relative imports found: the pattern no longer matches the emit`,
    );
  });

  it("runs the image's entry point with type stripping off: --help loads every module and prints the usage", () => {
    const run = spawnSync(process.execPath, [...IMAGE_NODE_FLAGS, mainJs, "--help"], {
      cwd: dir,
      encoding: "utf8",
      env: { PATH: process.env.PATH },
    });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stderr, usage());
  });

  it("the image and npm start run the entry point with the same Node flags", () => {
    const dockerfile = readFileSync(join(repoRoot, "Dockerfile"), "utf8");
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1];
    assert.ok(entrypoint, "the Dockerfile has no exec-form ENTRYPOINT");
    const command = ["node", ...IMAGE_NODE_FLAGS, "dist/main.js"];
    assert.deepEqual(JSON.parse(entrypoint), command);
    const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
      scripts: { start: string };
    };
    assert.equal(pkg.scripts.start, command.join(" "));
  });

  it("loads at start none of the modules the operator does not use there (benchmark 4's resident set)", () => {
    // What importing the operator's modules loads, listed by the process itself: Node's built-ins
    // and the CommonJS packages (prom-client and its own) in the require cache.
    const probe = `
      import { createRequire } from "node:module";
      await import(${JSON.stringify(pathToFileURL(join(dir, "dist", "operator.js")).href)});
      const cached = Object.keys(createRequire(import.meta.url).cache);
      process.stdout.write(JSON.stringify({ builtins: process.moduleLoadList, packages: cached }));`;
    const run = spawnSync(process.execPath, [...IMAGE_NODE_FLAGS, "--input-type=module", "-e", probe], {
      cwd: dir,
      encoding: "utf8",
      env: { PATH: process.env.PATH },
    });
    assert.equal(run.status, 0, run.stderr);
    const { builtins, packages } = JSON.parse(run.stdout) as { builtins: string[]; packages: string[] };
    assert.ok(builtins.includes("NativeModule http"), "the probe saw no built-in load");
    assert.ok(
      packages.some((file) => file.includes("/prom-client/lib/registry.js")),
      "the probe saw no package",
    );
    // An ESM import of node:http runs its WebSocket getter, which loads the bundled undici; pino
    // (its transports) and an ESM import of node:util load worker_threads.
    assert.ok(!builtins.includes("NativeModule internal/deps/undici/undici"), "undici is loaded");
    assert.ok(!builtins.includes("NativeModule worker_threads"), "worker_threads is loaded");
    // prom-client's index loads the default collectors and @opentelemetry/api with them.
    const unused = packages.filter((file) => /\/(@opentelemetry|prom-client\/lib\/metrics)\//.test(file));
    assert.deepEqual(unused, []);
  });
});
