// The SDK as a user gets it: `npm run sdk` packs @cocoonstack/sdk, `npm install <tarball>` puts it
// into an empty project, and there, on Node 20 (the oldest Node it supports), the two examples run as
// a user runs them (`node rl-rollout.mjs`, `node eval-fanout.mjs`) against the real control plane,
// registry and vk-cocoon simulator, with the operator in this process and a pool made for each; a
// TypeScript consumer and the examples type-check against the package's declarations.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, globSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { SDK_PACKAGE_NAME, withoutNpmRunVariables } from "../../scripts/sdk.ts";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import type { CocoonPoolSpec } from "../../src/apis/v1alpha1/types.ts";
import { LABEL_POOL } from "../../src/pool/keys.ts";
import { apiRequest, testEnv } from "../env/testenv.ts";
import { claimsPath, createPool, waitPoolReady } from "../support/poolapi.ts";
import { setsPath } from "../support/setapi.ts";
import { E2E_IMAGE, type SetEnv, startSetEnv } from "../support/setwait.ts";

const repoRoot = resolve(import.meta.dirname, "../..");
const env = testEnv();
const COLD_POOL = "rollout-cold";
const WARM_POOL = "evals-warm";
const FANOUT = 3;

let dir: string;
let app: string;
let e2e: SetEnv | undefined;
let node: { path: string; version: string; note: string };
let tarball: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end without blocking this process (the operator runs in it). */
function run(
  file: string,
  args: readonly string[],
  opts: { cwd: string; env: Record<string, string>; timeoutMs: number },
): Promise<Run> {
  return new Promise((done) => {
    execFile(
      file,
      args,
      { cwd: opts.cwd, env: opts.env, timeout: opts.timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        done({
          code,
          stdout,
          stderr: err && typeof err.code !== "number" ? `${stderr}${err.message}` : stderr,
        });
      },
    );
  });
}

function expectSuccess(what: string, result: Run): void {
  assert.equal(
    result.code,
    0,
    `${what} exited ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
  );
}

/**
 * The Node the examples run on: the first Node 20 found in /usr/bin, on PATH or in a CI runner's tool
 * cache; without one, this process's Node (the note says so in the test output).
 */
async function findNode20(): Promise<{ path: string; version: string; note: string }> {
  const candidates = [
    "/usr/bin/node",
    ...(process.env.PATH ?? "").split(delimiter).map((d) => join(d, "node")),
    ...globSync("/opt/hostedtoolcache/node/20.*/*/bin/node").sort().reverse(),
  ];
  for (const candidate of candidates) {
    const probe = await run(candidate, ["--version"], { cwd: repoRoot, env: {}, timeoutMs: 10_000 });
    const version = probe.stdout.trim();
    if (probe.code === 0 && version.startsWith("v20.")) {
      return { path: candidate, version, note: `the examples run on Node ${version} (${candidate})` };
    }
  }
  return {
    path: process.execPath,
    version: process.version,
    note: `no Node 20 found (/usr/bin/node, PATH, /opt/hostedtoolcache): the examples run on this test's Node ${process.version}`,
  };
}

/** The environment a user of this cluster has: its kubeconfig and nothing of the repository. */
function userEnv(): Record<string, string> {
  return {
    HOME: dir,
    PATH: ["/usr/local/bin", "/usr/bin", "/bin"].join(delimiter),
    KUBECONFIG: env.kubeconfigPath,
  };
}

const poolSpec = (nodePool: string, replicas: number, warmth: "Running" | "Suspended"): CocoonPoolSpec => ({
  replicas,
  warmth,
  template: { spec: { nodePool, agent: { image: E2E_IMAGE, replicas: 0, mode: "clone" } } },
});

/** The claims in the namespace and its sets that are not unclaimed pool members. */
async function leftovers(ns: string): Promise<{ claims: string[]; sets: string[] }> {
  const claims = await apiRequest(env, "GET", claimsPath(ns));
  assert.equal(claims.status, 200, JSON.stringify(claims.body));
  const sets = await apiRequest(env, "GET", setsPath(ns));
  assert.equal(sets.status, 200, JSON.stringify(sets.body));
  return {
    claims: (claims.body.items as { metadata: { name: string } }[]).map((c) => c.metadata.name),
    sets: (sets.body.items as CocoonSet[])
      .filter((cs) => !cs.metadata.labels?.[LABEL_POOL])
      .map((cs) => cs.metadata.name ?? ""),
  };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "cocoon-sdk-"));
  e2e = await startSetEnv(env, "sdkpkg");
  const ns = e2e.ns;
  // The pools fill while the package is built and installed.
  await createPool(env, ns, COLD_POOL, poolSpec(e2e.pool, 1, "Suspended"));
  await createPool(env, ns, WARM_POOL, poolSpec(e2e.pool, FANOUT, "Running"));
  node = await findNode20();

  const out = join(dir, "out");
  const sdk = await run("npm", ["run", "sdk", "--", "--out", out], {
    cwd: repoRoot,
    env: withoutNpmRunVariables(process.env),
    timeoutMs: 120_000,
  });
  expectSuccess("npm run sdk", sdk);
  tarball = sdk.stdout.trim().split("\n").at(-1) ?? "";
  assert.match(tarball, /cocoonstack-sdk-\d+\.\d+\.\d+.*\.tgz$/, sdk.stdout);

  // An empty project, as `npm init` leaves it, and the package installed into it from the tarball.
  // The npm cache answers when it holds yaml already (npm ci filled it); else the registry does.
  app = join(dir, "app");
  mkdirSync(app);
  writeFileSync(
    join(app, "package.json"),
    `${JSON.stringify({ name: "sdk-user", version: "1.0.0", private: true, type: "module" })}\n`,
  );
  const install = await run(
    "npm",
    ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", tarball],
    { cwd: app, env: withoutNpmRunVariables(process.env), timeoutMs: 120_000 },
  );
  expectSuccess("npm install <tarball>", install);
  for (const example of ["rl-rollout.mjs", "eval-fanout.mjs"]) {
    copyFileSync(join(repoRoot, "examples", example), join(app, example));
  }
});

after(async () => {
  await e2e?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the SDK package", () => {
  it("installs from its tarball as ESM for Node 20 with declarations, depending on yaml alone", () => {
    const installed = join(app, "node_modules", ...SDK_PACKAGE_NAME.split("/"));
    const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    const repoPkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8"));
    assert.equal(pkg.version, repoPkg.version);
    assert.equal(pkg.type, "module");
    assert.match(pkg.engines.node, /^>=20\./);
    assert.deepEqual(pkg.dependencies, { yaml: repoPkg.dependencies.yaml });
    assert.deepEqual(
      Object.keys(JSON.parse(readFileSync(join(app, "package-lock.json"), "utf8")).packages).sort(),
      ["", "node_modules/@cocoonstack/sdk", "node_modules/yaml"],
    );
    const files = globSync("**/*", { cwd: installed, withFileTypes: true })
      .filter((f) => f.isFile())
      .map((f) => join(f.parentPath, f.name).slice(installed.length + 1));
    for (const file of ["package.json", "README.md", "LICENSE", "dist/sdk/index.js", "dist/sdk/index.d.ts"]) {
      assert.ok(files.includes(file), `the package holds ${file}`);
    }
    assert.deepEqual(
      files.filter(
        (f) => !/^dist\/.*(\.js|\.d\.ts)$/.test(f) && !["package.json", "README.md", "LICENSE"].includes(f),
      ),
      [],
      "nothing but compiled modules, declarations, package.json, README.md and LICENSE",
    );
    for (const file of files.filter((f) => f.startsWith("dist/"))) {
      assert.doesNotMatch(
        readFileSync(join(installed, file), "utf8"),
        /from\s*["']\.{1,2}\/[^"']*\.ts["']/,
        file,
      );
    }
  });

  it("loads on Node 20 from the user's project and exports the public classes", async () => {
    const load = await run(
      node.path,
      [
        "--input-type=module",
        "-e",
        `console.log(Object.keys(await import("${SDK_PACKAGE_NAME}")).sort().join(" "))`,
      ],
      { cwd: app, env: userEnv(), timeoutMs: 30_000 },
    );
    expectSuccess("import", load);
    assert.equal(
      load.stdout.trim(),
      "AgentGroup CocoonClient CocoonError CocoonNotFoundError CocoonOperationError CocoonTimeoutError",
    );
  });

  it("type-checks a TypeScript consumer and the examples against its declarations, and they are real types", async () => {
    writeFileSync(join(app, "consumer.ts"), CONSUMER);
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "es2022",
          module: "nodenext",
          moduleResolution: "nodenext",
          lib: ["es2023"],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          allowJs: true,
          checkJs: true,
          types: ["node"],
          typeRoots: [join(repoRoot, "node_modules/@types")],
        },
        files: ["consumer.ts", "rl-rollout.mjs", "eval-fanout.mjs"],
      }),
    );
    const tsc = join(repoRoot, "node_modules/typescript/lib/tsc.js");
    const check = await run(process.execPath, [tsc, "-p", "tsconfig.json"], {
      cwd: app,
      env: userEnv(),
      timeoutMs: 60_000,
    });
    expectSuccess("tsc", check);
    // The consumer's @ts-expect-error lines hold only while the declarations are precise: typed as
    // `any`, each would be an unused directive and fail the check above. And a plain mistake fails.
    writeFileSync(
      join(app, "consumer.ts"),
      `${CONSUMER}\nexport const wrong: number = (await CocoonClient.connect()).namespace;\n`,
    );
    const broken = await run(process.execPath, [tsc, "-p", "tsconfig.json"], {
      cwd: app,
      env: userEnv(),
      timeoutMs: 60_000,
    });
    assert.notEqual(broken.code, 0, broken.stdout);
    assert.match(broken.stdout, /consumer\.ts.*TS2322/);
  });

  it("runs examples/rl-rollout.mjs: claim from a Suspended pool, checkpoint, branch 4, an episode in each, restore, release", {
    timeout: 150_000,
  }, async (t) => {
    t.diagnostic(node.note);
    const ns = e2e?.ns ?? "";
    await waitPoolReady(env, ns, COLD_POOL, 1, 90_000);
    const rollout = await run(node.path, ["rl-rollout.mjs", "--namespace", ns, "--pool", COLD_POOL], {
      cwd: app,
      env: userEnv(),
      timeoutMs: 120_000,
    });
    expectSuccess("rl-rollout.mjs", rollout);
    // One signal shared by every call is how a user cancels a run: it must not leak listeners (Node
    // warns past 10 on one AbortSignal) nor print anything else to the user's terminal.
    assert.equal(rollout.stderr, "", "nothing on stderr");
    const out = rollout.stdout;
    assert.match(out, new RegExp(`^claimed \\S+ from ${ns}/${COLD_POOL}: main$`, "m"));
    assert.match(out, /^checkpoint \S+ Ready$/m);
    assert.match(out, /^branched 4: \S+, \S+, \S+, \S+$/m);
    for (let episode = 0; episode < 4; episode++) {
      assert.match(
        out,
        new RegExp(`^episode ${episode} on \\S+: 3 steps, reward ${(episode + 1) / 4}$`, "m"),
      );
    }
    assert.match(out, /^restored \S+ to \S+$/m);
    assert.match(out, /^rl-rollout: 4 episodes, total reward 2\.50, rolled back and released in [\d.]+ s$/m);
    assert.deepEqual(await leftovers(ns), { claims: [], sets: [] }, "the claim and the 4 branches are gone");
  });

  it(`runs examples/eval-fanout.mjs: ${FANOUT} claims at once from a Running pool, a case in each, all released`, {
    timeout: 90_000,
  }, async (t) => {
    t.diagnostic(node.note);
    const ns = e2e?.ns ?? "";
    await waitPoolReady(env, ns, WARM_POOL, FANOUT, 60_000);
    const fanout = await run(
      node.path,
      ["eval-fanout.mjs", "--namespace", ns, "--pool", WARM_POOL, "--count", String(FANOUT)],
      { cwd: app, env: userEnv(), timeoutMs: 60_000 },
    );
    expectSuccess("eval-fanout.mjs", fanout);
    assert.equal(fanout.stderr, "", "nothing on stderr");
    const out = fanout.stdout;
    assert.match(out, new RegExp(`^claimed ${FANOUT} groups from ${ns}/${WARM_POOL} in \\d+ ms$`, "m"));
    const groups = [...out.matchAll(/^case (\d+) on (\S+): passed in \d+ ms$/gm)];
    assert.deepEqual(
      groups.map((m) => Number(m[1])).sort(),
      Array.from({ length: FANOUT }, (_, i) => i),
    );
    assert.equal(new Set(groups.map((m) => m[2])).size, FANOUT, "each case ran in a group of its own");
    assert.match(
      out,
      new RegExp(
        `^eval-fanout: ${FANOUT}/${FANOUT} cases passed on ${FANOUT} groups, released in [\\d.]+ s$`,
        "m",
      ),
    );
    assert.deepEqual(await leftovers(ns), { claims: [], sets: [] }, "every claimed group is released");
  });

  it("an example refuses a missing pool with a usage error, exit 2", async () => {
    const usage = await run(node.path, ["eval-fanout.mjs"], { cwd: app, env: userEnv(), timeoutMs: 30_000 });
    assert.equal(usage.code, 2, usage.stderr);
    assert.match(usage.stderr, /^usage: eval-fanout\.mjs --pool POOL/);
  });
});

/**
 * What a TypeScript user writes against the package (the design's surface), with the mistakes its
 * types must refuse marked @ts-expect-error.
 */
const CONSUMER = `import {
  type AgentGroup,
  CocoonClient,
  CocoonError,
  CocoonNotFoundError,
  CocoonOperationError,
  CocoonTimeoutError,
  type ExecResult,
  type Member,
} from "${SDK_PACKAGE_NAME}";

export async function rollout(signal: AbortSignal): Promise<string[]> {
  const client: CocoonClient = await CocoonClient.connect({ namespace: "team-a", context: "kind" });
  const ns: string = client.namespace;
  const group: AgentGroup = await client.claim("warm-pool", { timeoutMs: 30_000, signal });
  const main: Member | undefined = group.members.find((m) => m.role === "main");
  const r: ExecResult = await group.exec(main ?? "main", ["sh", "-c", "echo hi"], { timeoutMs: 10_000 });
  const out: string = r.stdout + r.stderr;
  await group.writeFile(0, "/tmp/task.json", new Uint8Array([123, 125]));
  const bytes: Uint8Array = await group.readFile("main", "/tmp/task.json");
  await group.checkpoint("step-1", { onProgress: (text: string) => void text });
  const forks: AgentGroup[] = await client.branch("step-1", { count: 4 });
  await group.restore("step-1");
  await group.suspend();
  await group.resume({ timeoutMs: 1_000 });
  await group.touch();
  await group.refresh();
  const existing: AgentGroup = await client.group("existing-set");
  await Promise.all(forks.map((f) => f.release()));
  try {
    await group.release();
  } catch (err) {
    if (err instanceof CocoonTimeoutError || err instanceof CocoonOperationError || err instanceof CocoonNotFoundError) {
      const reason: string = err.reason;
      return [reason];
    }
    if (err instanceof CocoonError) return [err.message];
  }
  // @ts-expect-error a member's role is one of three names
  const role: "admin" = group.members[0]!.role;
  // @ts-expect-error exec takes argv as an array of strings
  await group.exec("main", "echo hi");
  // @ts-expect-error exec's result has no such field
  const missing = r.exit;
  return [ns, out, String(r.exitCode), String(bytes.length), role, group.name, group.claim ?? "", existing.namespace, String(missing)];
}
`;
