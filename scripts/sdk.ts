// `make sdk`: the SDK package, @cocoonstack/sdk (docs/sdk.md). Compiles src/sdk/index.ts and what it
// imports with tsconfig.sdk.json (ESM for Node 20: ES2023, declarations beside the modules), checks that
// the compiled closure is the SDK's alone, writes the package's package.json, README.md and LICENSE,
// and packs it with `npm pack`. Writes to dist/sdk/ (or --out DIR):
//   package/                      the package as installed: package.json, README.md, LICENSE, dist/
//   cocoonstack-sdk-VERSION.tgz   the tarball `npm install` takes
// Flags: --version X.Y.Z (default: package.json's), --out DIR.

import { spawnSync } from "node:child_process";
import { globSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, posix, resolve } from "node:path";
import { parseArgs } from "node:util";

const root = resolve(import.meta.dirname, "..");

export const SDK_PACKAGE_NAME = "@cocoonstack/sdk";
/** The package's one entry, as emitted under the package's dist/ (tsconfig.sdk.json's rootDir is src/). */
export const SDK_ENTRY = "sdk/index.js";
/**
 * Node 20.16 is the first Node 20 with process.getBuiltinModule, which the SDK's client loads its
 * http and https through (src/builtins.ts).
 */
export const SDK_NODE_ENGINES = ">=20.16.0";
/** The only npm package the SDK may load: the kubeconfig loader's YAML parser. */
export const SDK_DEPENDENCIES = ["yaml"] as const;

/**
 * Modules of the operator runtime (manager, informers, the operator and its entry point) and of the
 * plugin: a program that imports the SDK must not load them, nor their dependencies (prom-client).
 * Paths are the emitted ones, relative to the package's dist/.
 */
export const FORBIDDEN_MODULES: readonly { pattern: RegExp; what: string }[] = [
  { pattern: /^operator\.js$/, what: "the operator runtime" },
  { pattern: /^main\.js$/, what: "the operator's entry point" },
  { pattern: /^controller\/manager\.js$/, what: "the controller manager" },
  { pattern: /^informers\//, what: "the operator's informers" },
  { pattern: /^plugin\//, what: "the kubectl plugin" },
];

/**
 * The module specifiers a compiled module or declaration file names: import and export statements
 * (tsc emits each at the start of a line), import() (in declarations too), require(),
 * createRequire(...)("x") and process.getBuiltinModule("x").
 */
export function specifiersOf(text: string): string[] {
  const patterns = [
    /^\s*(?:import|export)\s[^;]*?(?<=[\s}*])from\s*["']([^"'\s;]+)["']/gm,
    /^\s*import\s*["']([^"'\s;]+)["']/gm,
    /\b(?:import|require|getBuiltinModule)\s*\(\s*["']([^"'\s;]+)["']\s*\)/g,
    /\bcreateRequire\([^)]*\)\s*\(\s*["']([^"'\s;]+)["']\s*\)/g,
  ];
  return patterns.flatMap((pattern) => [...text.matchAll(pattern)].map((m) => m[1] as string));
}

/** The npm package a bare specifier names ("yaml/util" → "yaml", "@a/b/c" → "@a/b"). */
export function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string);
}

const isBuiltin = (specifier: string): boolean =>
  specifier.startsWith("node:") || builtinModules.includes(specifier);

const sourceOf = (emitted: string): string => `src/${emitted.replace(/(\.d\.ts|\.js)$/, ".ts")}`;

/**
 * What is wrong with a compiled closure, given as emitted path (relative to dist/, posix) → text:
 * a forbidden module in it, an npm package other than the SDK's dependencies, a relative import that
 * still names a .ts file or names no emitted module. Empty when the closure is the SDK's alone.
 */
export function closureProblems(files: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  const importers = new Map<string, string[]>();
  for (const [file, text] of files) {
    for (const specifier of specifiersOf(text)) {
      if (specifier.startsWith("./") || specifier.startsWith("../")) {
        if (/\.[mc]?tsx?$/.test(specifier) && !specifier.endsWith(".d.ts")) {
          problems.push(`${file} imports ${specifier}: a .ts module, which Node 20 cannot load`);
          continue;
        }
        const target = posix.normalize(posix.join(posix.dirname(file), specifier));
        const module = file.endsWith(".d.ts") ? target.replace(/\.js$/, ".d.ts") : target;
        if (!files.has(module)) problems.push(`${file} imports ${specifier}, which was not emitted`);
        const seen = importers.get(target) ?? [];
        importers.set(target, [...seen, file]);
      } else if (!isBuiltin(specifier)) {
        const pkg = packageOf(specifier);
        if (!(SDK_DEPENDENCIES as readonly string[]).includes(pkg)) {
          problems.push(
            `${sourceOf(file)} imports the npm package ${pkg}: the SDK may depend on ${SDK_DEPENDENCIES.join(", ")} only`,
          );
        }
      }
    }
  }
  // Per forbidden part, the imports that cross into it from outside it: where the SDK reaches it.
  const forbiddenOf = (file: string) => FORBIDDEN_MODULES.find((f) => f.pattern.test(file));
  for (const forbidden of FORBIDDEN_MODULES) {
    const inside = [...files.keys()].filter((f) => f.endsWith(".js") && forbiddenOf(f) === forbidden);
    if (inside.length === 0) continue;
    const crossings = inside.flatMap((file) =>
      (importers.get(file) ?? [])
        .filter((from) => from.endsWith(".js") && forbiddenOf(from) !== forbidden)
        .map((from) => `${sourceOf(from)} imports ${sourceOf(file)}`),
    );
    problems.push(
      `the SDK's import closure reaches ${forbidden.what} (${inside.length} module${inside.length === 1 ? "" : "s"}): ${crossings.join("; ")}`,
    );
  }
  return problems;
}

/**
 * tsc rewrites relative `.ts` specifiers in the JavaScript it emits but leaves them in declaration
 * files; a consumer resolves `./x.js` to `./x.d.ts`, and one without allowImportingTsExtensions
 * refuses `./x.ts`.
 */
export function rewriteDeclarationSpecifiers(dts: string): string {
  return dts.replace(
    /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])(\.{1,2}\/[^"']+?)\.([mc]?)ts\2/g,
    (_all, lead: string, quote: string, path: string, kind: string) =>
      `${lead}${quote}${path}.${kind}js${quote}`,
  );
}

interface RepoPackage {
  version: string;
  license: string;
  dependencies: Record<string, string>;
}

/** The SDK's package.json: ESM, one entry with its types, Node 20, the repository's pinned yaml. */
export function sdkPackageJson(repo: RepoPackage, version: string): Record<string, unknown> {
  const dependencies: Record<string, string> = {};
  for (const name of SDK_DEPENDENCIES) {
    const pinned = repo.dependencies[name];
    if (!pinned) throw new Error(`package.json does not pin ${name}, an SDK dependency`);
    dependencies[name] = pinned;
  }
  const types = `./dist/${SDK_ENTRY.replace(/\.js$/, ".d.ts")}`;
  return {
    name: SDK_PACKAGE_NAME,
    version,
    description:
      "Claim, branch, checkpoint, restore, run commands in and release cocoon-operator agent groups from TypeScript",
    license: repo.license,
    type: "module",
    exports: { ".": { types, default: `./dist/${SDK_ENTRY}` }, "./package.json": "./package.json" },
    types,
    files: ["dist"],
    engines: { node: SDK_NODE_ENGINES },
    dependencies,
    keywords: ["kubernetes", "cocoon", "agents", "sandbox", "microvm", "sdk"],
  };
}

function sdkReadme(version: string): string {
  return `# ${SDK_PACKAGE_NAME}

The TypeScript SDK of cocoon-operator (version ${version}): claim agent groups from warm pools, fork
them from checkpoints, roll them back, run commands in and move files through their guests, and
release them, as library calls. ESM with type declarations, for Node ${SDK_NODE_ENGINES}; its one
dependency is \`yaml\` (for kubeconfig files).

\`\`\`ts
import { CocoonClient } from "${SDK_PACKAGE_NAME}";

const client = await CocoonClient.connect({ namespace: "team-a" }); // kubeconfig as kubectl reads it
const group = await client.claim("warm-pool", { timeoutMs: 30_000 });
const r = await group.exec("main", ["sh", "-c", "echo hi"]);
console.log(r.exitCode, r.stdout);
await group.release();
\`\`\`

The full reference (connecting, each call, its waits and errors, and the calls beside E2B's) is
docs/sdk.md in the cocoon-operator repository this package is built from; runnable programs are in
its examples/ folder.
`;
}

/** The license package.json declares; the repository states it there, so the package carries its text. */
function licenseText(license: string): string {
  if (license !== "MIT") throw new Error(`package.json declares license ${license}: no text for it here`);
  return `MIT License

Copyright (c) The cocoon-operator authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
`;
}

/**
 * Compiles the SDK into `outDir` with tsconfig.sdk.json, rewrites the declarations' specifiers and
 * checks the closure; returns the emitted files (relative to outDir). Throws with tsc's diagnostics
 * or the closure's problems.
 */
export function compileSdk(outDir: string): string[] {
  rmSync(outDir, { recursive: true, force: true });
  const tsc = join(root, "node_modules/typescript/lib/tsc.js");
  const run = spawnSync(process.execPath, [tsc, "-p", "tsconfig.sdk.json", "--outDir", outDir], {
    cwd: root,
    encoding: "utf8",
  });
  if (run.status !== 0) {
    throw new Error(
      `tsc -p tsconfig.sdk.json failed (the SDK is compiled for Node 20: ES2023, no newer library):\n${run.stdout}${run.stderr}`,
    );
  }
  const emitted = globSync("**/*.{js,d.ts}", { cwd: outDir }).sort();
  const files = new Map<string, string>();
  for (const file of emitted) {
    let text = readFileSync(join(outDir, file), "utf8");
    if (file.endsWith(".d.ts")) {
      text = rewriteDeclarationSpecifiers(text);
      writeFileSync(join(outDir, file), text);
    }
    files.set(file, text);
  }
  if (!files.has(SDK_ENTRY)) throw new Error(`tsc emitted no ${SDK_ENTRY} from src/sdk/index.ts`);
  const problems = closureProblems(files);
  if (problems.length > 0) {
    throw new Error(`the compiled SDK is not self-contained:\n  ${problems.join("\n  ")}`);
  }
  return emitted;
}

/**
 * The environment without what `npm run` exports to its script (npm_config_local_prefix and the
 * like, all lower case): an npm started from a script would otherwise act on the repository's own
 * project. Upper-case NPM_CONFIG_* settings are the user's and stay.
 */
export function withoutNpmRunVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && !key.startsWith("npm_")) kept[key] = value;
  }
  return kept;
}

export interface SdkBuild {
  /** The package directory npm packed. */
  packageDir: string;
  /** The tarball's path. */
  tarball: string;
  version: string;
}

/** Compiles, lays out and packs the SDK into `out`. */
export function buildSdkPackage(out: string, version?: string): SdkBuild {
  const repo = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as RepoPackage;
  const v = version ?? repo.version;
  const packageDir = join(out, "package");
  rmSync(packageDir, { recursive: true, force: true });
  compileSdk(join(packageDir, "dist"));
  writeFileSync(join(packageDir, "package.json"), `${JSON.stringify(sdkPackageJson(repo, v), null, 2)}\n`);
  writeFileSync(join(packageDir, "README.md"), sdkReadme(v));
  writeFileSync(join(packageDir, "LICENSE"), licenseText(repo.license));
  mkdirSync(out, { recursive: true });
  const pack = spawnSync(
    "npm",
    ["pack", "--json", "--ignore-scripts", "--pack-destination", resolve(out), packageDir],
    { cwd: out, encoding: "utf8", env: withoutNpmRunVariables(process.env) },
  );
  if (pack.status !== 0) throw new Error(`npm pack failed:\n${pack.stdout}${pack.stderr}`);
  const [packed] = JSON.parse(pack.stdout) as { filename: string }[];
  if (!packed) throw new Error(`npm pack reported no tarball:\n${pack.stdout}`);
  return { packageDir, tarball: join(resolve(out), packed.filename), version: v };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      version: { type: "string" },
      out: { type: "string", default: join(root, "dist/sdk") },
    },
  });
  try {
    const build = buildSdkPackage(resolve(values.out), values.version);
    console.log(build.tarball);
  } catch (err) {
    console.error(`make sdk: ${(err as Error).message}`);
    process.exitCode = 1;
  }
}
