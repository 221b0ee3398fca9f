// scripts/sdk.ts's checks of the compiled SDK, on emitted files written here: the closure holds no
// operator runtime and no npm package but yaml, every relative import names an emitted JavaScript
// module, and declaration files name .js modules as the JavaScript does. The package itself is built,
// installed and run by test/integration/sdk-package.test.ts.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  closureProblems,
  packageOf,
  rewriteDeclarationSpecifiers,
  SDK_PACKAGE_NAME,
  sdkPackageJson,
  specifiersOf,
} from "../../scripts/sdk.ts";

const closure = (files: Record<string, string>) => closureProblems(new Map(Object.entries(files)));

const sdkEntry = 'import { KubeClient } from "../controller/client.js";\nexport { KubeClient };\n';
const client =
  'import { createRequire } from "node:module";\nimport { http } from "../builtins.js";\n' +
  'const yaml = createRequire(import.meta.url)("yaml");\nexport class KubeClient {}\n';
const builtins = 'export const http = process.getBuiltinModule("node:http");\n';

describe("the SDK's compiled closure", () => {
  it("is accepted with node built-ins, relative .js modules and yaml loaded through createRequire", () => {
    assert.deepEqual(
      closure({ "sdk/index.js": sdkEntry, "controller/client.js": client, "builtins.js": builtins }),
      [],
    );
  });

  it("is refused when it reaches the operator, the manager or the plugin, naming the importer", () => {
    const problems = closure({
      "sdk/index.js": 'import "../pool/decide.js";\nexport const x = 1;\n',
      "pool/decide.js": 'import { Manager } from "../controller/manager.js";\nimport "../operator.js";\n',
      "controller/manager.js": "export class Manager {}\n",
      "operator.js": 'import { run } from "./plugin/cli.js";\n',
      "plugin/cli.js": "export const run = 1;\n",
    });
    assert.deepEqual(problems, [
      "the SDK's import closure reaches the operator runtime (1 module): src/pool/decide.ts imports src/operator.ts",
      "the SDK's import closure reaches the controller manager (1 module): src/pool/decide.ts imports src/controller/manager.ts",
      "the SDK's import closure reaches the kubectl plugin (1 module): src/operator.ts imports src/plugin/cli.ts",
    ]);
  });

  it("is refused when a module loads an npm package other than yaml, statically or through require", () => {
    const problems = closure({
      "sdk/index.js": 'import { Registry } from "prom-client";\nexport { Registry };\n',
      "controller/prom.js":
        'const require = createRequire(import.meta.url);\nconst g = require("@google/auth/x");\n',
    });
    assert.deepEqual(problems, [
      "src/sdk/index.ts imports the npm package prom-client: the SDK may depend on yaml only",
      "src/controller/prom.ts imports the npm package @google/auth: the SDK may depend on yaml only",
    ]);
  });

  it("is refused when a relative import still names a .ts module or a module that was not emitted", () => {
    assert.deepEqual(
      closure({
        "sdk/index.js": 'export { a } from "./a.ts";\nexport { b } from "./b.js";\n',
        "sdk/index.d.ts": 'export { a } from "./a.ts";\n',
      }),
      [
        "sdk/index.js imports ./a.ts: a .ts module, which Node 20 cannot load",
        "sdk/index.js imports ./b.js, which was not emitted",
        "sdk/index.d.ts imports ./a.ts: a .ts module, which Node 20 cannot load",
      ],
    );
  });

  it("reads no specifier out of a string constant or a comment that merely holds one", () => {
    const keys =
      'export const LABEL_CLAIMED_FROM = "cocoonset.cocoonstack.io/claimed-from";\n' +
      '// imports from "prom-client" would be refused\nexport const B = "x";\n';
    assert.deepEqual(specifiersOf(keys), []);
  });
});

describe("declaration files", () => {
  it("name .js modules where tsc left the source's .ts, in imports, re-exports and import() types", () => {
    const dts =
      'import type { Pod } from "../apis/core.ts";\nexport * from "./errors.ts";\n' +
      'export declare const c: import("./client.ts").KubeClient;\nimport type { Y } from "yaml";\n';
    assert.equal(
      rewriteDeclarationSpecifiers(dts),
      'import type { Pod } from "../apis/core.js";\nexport * from "./errors.js";\n' +
        'export declare const c: import("./client.js").KubeClient;\nimport type { Y } from "yaml";\n',
    );
  });
});

describe("the SDK's package.json", () => {
  const repo = { version: "1.2.3", license: "MIT", dependencies: { yaml: "2.9.1", "prom-client": "15.1.3" } };

  it("is an ESM package with typed exports, for Node 20, depending on the repository's pinned yaml alone", () => {
    const pkg = sdkPackageJson(repo, "1.2.3") as {
      name: string;
      version: string;
      type: string;
      exports: Record<string, { types: string; default: string }>;
      engines: { node: string };
      dependencies: Record<string, string>;
    };
    assert.equal(pkg.name, SDK_PACKAGE_NAME);
    assert.equal(pkg.version, "1.2.3");
    assert.equal(pkg.type, "module");
    assert.deepEqual(pkg.exports["."], { types: "./dist/sdk/index.d.ts", default: "./dist/sdk/index.js" });
    assert.match(pkg.engines.node, /^>=20\./);
    assert.deepEqual(pkg.dependencies, { yaml: "2.9.1" });
  });

  it("cannot be written when the repository no longer pins yaml", () => {
    assert.throws(() => sdkPackageJson({ ...repo, dependencies: {} }, "1.2.3"), /does not pin yaml/);
  });

  it("names scoped and deep package specifiers by their package", () => {
    assert.equal(packageOf("yaml/util"), "yaml");
    assert.equal(packageOf("@scope/pkg/deep"), "@scope/pkg");
  });
});
