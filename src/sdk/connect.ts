// Which cluster and namespace the SDK (and the plugin) talks to, by kubectl's rules: --kubeconfig, else the
// KUBECONFIG path list (merged), else ~/.kube/config, else the in-cluster service account; --context
// picks a context other than the current one; -n/--namespace, else the context's namespace, else
// "default". The loading and auth are the operator's own (src/controller/kubeconfig.ts).

import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { KubeClient } from "../controller/client.ts";
import {
  inClusterRestConfig,
  type Kubeconfig,
  KubeconfigError,
  type RestConfig,
  readKubeconfigFile,
  readKubeconfigPathList,
  restConfigFromKubeconfig,
} from "../controller/kubeconfig.ts";
import { CocoonError } from "./errors.ts";

type Env = Readonly<Record<string, string | undefined>>;

export interface ConnectionFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
}

export interface Connection {
  client: KubeClient;
  namespace: string;
}

/** The kubeconfig kubectl would read, or undefined when it would fall back to in-cluster. */
export function loadKubeconfig(flags: ConnectionFlags, env: Env, home = homedir()): Kubeconfig | undefined {
  if (flags.kubeconfig) return readKubeconfigFile(flags.kubeconfig);
  if (env.KUBECONFIG) return readKubeconfigPathList(env.KUBECONFIG);
  const file = join(home, ".kube", "config");
  return existsSync(file) ? readKubeconfigFile(file) : undefined;
}

export function resolveConnection(
  flags: ConnectionFlags,
  env: Env,
  home?: string,
): { restConfig: RestConfig; namespace: string } {
  let restConfig: RestConfig;
  try {
    const kubeconfig = loadKubeconfig(flags, env, home);
    if (kubeconfig) {
      restConfig = restConfigFromKubeconfig(kubeconfig, { context: flags.context || undefined, env });
    } else if (env.KUBERNETES_SERVICE_HOST && !flags.context) {
      restConfig = inClusterRestConfig({ env });
    } else {
      throw new CocoonError(
        "NoConfig",
        flags.context
          ? `context "${flags.context}" not found: no kubeconfig (--kubeconfig, KUBECONFIG or ~/.kube/config)`
          : "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, or create ~/.kube/config",
      );
    }
  } catch (err) {
    if (err instanceof KubeconfigError) throw new CocoonError("BadConfig", err.message);
    throw err;
  }
  return { restConfig, namespace: flags.namespace || restConfig.namespace || "default" };
}

export function connect(
  flags: ConnectionFlags,
  env: Env,
  userAgent = "cocoon-sdk",
  home?: string,
): Connection {
  const { restConfig, namespace } = resolveConnection(flags, env, home);
  return {
    client: new KubeClient({ kubeConfig: restConfig, userAgent, requestTimeoutMs: 30_000 }),
    namespace,
  };
}
