// The test runner behind `npm test`: starts one control plane and one registry, runs every
// test/**/*.test.ts file (or the files given as arguments) with node --test against them, tears
// everything down and exits with the test exit code. Binaries come from build.sh (cached; `make
// test` builds them first). The report shows the operator's log only for a test that failed: each
// test file's process holds those lines per test (test/support/testlog.ts).
import { spawn } from "node:child_process";
import { globSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { type Environment, startEnvironment } from "./env/environment.ts";

const repoRoot = resolve(import.meta.dirname, "..");

/** The arguments' test files (a directory stands for the test files under it); default: all. */
function selectTestFiles(args: string[]): string[] {
  const paths = args.length > 0 ? args.map((arg) => relative(repoRoot, resolve(arg))) : ["test"];
  return paths.flatMap((path) =>
    statSync(join(repoRoot, path)).isDirectory()
      ? globSync(`${path}/**/*.test.ts`, { cwd: repoRoot }).sort()
      : [path],
  );
}

/** Unit tests run without the environment; anything else may need it. */
function needsEnvironment(files: string[]): boolean {
  return files.some((file) => !file.startsWith("test/unit/"));
}

/** The module each test file's process loads first: it holds log lines per test (test/support/testlog.ts). */
const TEST_LOG_HOOKS = "./test/support/testlog-hooks.ts";

function runNodeTest(files: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const args = ["--test", "--test-concurrency=2", `--import=${TEST_LOG_HOOKS}`, ...files];
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    stdio: "inherit",
    env,
  });
  // Ctrl-C reaches the child through the terminal's process group; a signal sent to this process
  // alone is passed on. Either way, teardown waits for the child to finish.
  const forward = (signal: NodeJS.Signals): void => {
    child.kill(signal);
  };
  process.on("SIGINT", forward);
  process.on("SIGTERM", forward);
  return new Promise((done) => {
    child.once("exit", (code, signal) => {
      process.off("SIGINT", forward);
      process.off("SIGTERM", forward);
      done(code ?? (signal ? 1 : 0));
    });
  });
}

async function main(): Promise<number> {
  const files = selectTestFiles(process.argv.slice(2));
  if (files.length === 0) {
    process.stderr.write("no test files found\n");
    return 1;
  }
  if (!needsEnvironment(files)) return runNodeTest(files, process.env);

  // One file per run, so concurrent runs in the same tree do not read each other's environment.
  const envFile = join(repoRoot, ".testenv", `env-${process.pid}.json`);
  let environment: Environment | undefined;
  try {
    environment = await startEnvironment();
    const { info, controlPlane } = environment;
    process.stderr.write(
      `testenv: control plane ${info.server} up in ${controlPlane.startupMs} ms, registry ${info.registry}\n`,
    );
    mkdirSync(join(repoRoot, ".testenv"), { recursive: true });
    writeFileSync(envFile, `${JSON.stringify(info, null, 2)}\n`);
    return await runNodeTest(files, { ...process.env, COCOON_TESTENV: envFile });
  } finally {
    rmSync(envFile, { force: true });
    await environment?.stop();
  }
}

process.exitCode = await main();
