import { type ControlPlane, startControlPlane } from "./controlplane.ts";
import { startRegistry, type TestRegistry } from "./registry.ts";
import type { TestEnvInfo } from "./testenv.ts";

/** A control plane and a registry started together; what both `npm test` and the sandbox run. */
export interface Environment {
  info: TestEnvInfo;
  controlPlane: ControlPlane;
  registry: TestRegistry;
  stop(): Promise<void>;
}

export async function startEnvironment(): Promise<Environment> {
  // Settle both so that one failing still leaves the other to be stopped.
  const [cp, reg] = await Promise.allSettled([startControlPlane(), startRegistry()]);
  if (cp.status === "rejected" || reg.status === "rejected") {
    await Promise.all([
      cp.status === "fulfilled" ? cp.value.stop() : undefined,
      reg.status === "fulfilled" ? reg.value.stop() : undefined,
    ]);
    throw cp.status === "rejected" ? cp.reason : (reg as PromiseRejectedResult).reason;
  }
  const controlPlane = cp.value;
  const registry = reg.value;
  const { kubeconfigPath, server, token, caFile } = controlPlane;
  return {
    info: { kubeconfigPath, server, token, caFile, registry: registry.host },
    controlPlane,
    registry,
    async stop() {
      await Promise.all([controlPlane.stop(), registry.stop()]);
    },
  };
}
