import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type ApiConnection, apiRequest } from "./kubeapi.ts";

export { type ApiConnection, type ApiResponse, apiRequest } from "./kubeapi.ts";

/** The running test environment, as written by test/run.ts (.testenv/env.json) or the sandbox. */
export interface TestEnvInfo extends ApiConnection {
  kubeconfigPath: string;
  /** Registry host:port on loopback (plain HTTP). */
  registry: string;
}

const repoRoot = resolve(import.meta.dirname, "../..");
export const sandboxEnvFile = join(repoRoot, ".sandbox/env.json");

/**
 * Reads the environment named by COCOON_TESTENV, else the one of a running sandbox. Throws when
 * there is neither, so an integration test run by hand explains what to do.
 */
export function testEnv(): TestEnvInfo {
  const file = process.env.COCOON_TESTENV || (existsSync(sandboxEnvFile) ? sandboxEnvFile : undefined);
  if (!file) {
    throw new Error(
      "integration tests need the test environment: run `make test` or `npm run sandbox -- up`",
    );
  }
  return JSON.parse(readFileSync(file, "utf8")) as TestEnvInfo;
}

/**
 * Creates a namespace with a unique name starting with `prefix`. Tests isolate by namespace and
 * never delete them: without a namespace controller a deleted namespace stays Terminating.
 */
export async function createNamespace(env: ApiConnection, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString("hex")}`;
  const res = await apiRequest(env, "POST", "/api/v1/namespaces", {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name },
  });
  if (res.status !== 201)
    throw new Error(`creating namespace ${name}: ${res.status} ${JSON.stringify(res.body)}`);
  return name;
}

/** Polls `probe` every 100 ms until it returns a value other than undefined; fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
