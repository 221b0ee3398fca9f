import { KubeClient } from "../../src/controller/client.ts";
import type { RestConfig } from "../../src/controller/kubeconfig.ts";

/** A KubeClient for `server` with no credentials and no TLS settings: for tests of the client itself. */
export function anonymousClient(server: string): KubeClient {
  const kubeConfig: RestConfig = {
    server,
    namespace: undefined,
    ca: undefined,
    insecureSkipTLSVerify: false,
    tlsServerName: undefined,
    credentials: async () => ({}),
    unauthorized: () => {},
  };
  return new KubeClient({ kubeConfig });
}
