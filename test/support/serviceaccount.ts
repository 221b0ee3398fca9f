// Service accounts on a real API server: the operator's RBAC from config/ applied, and tokens from the
// TokenRequest API, so a process runs with exactly a service account's grants.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import type { ControlPlane } from "../env/controlplane.ts";
import { type ApiConnection, apiRequest } from "../env/testenv.ts";
import { repoRoot } from "./build.ts";

/** The cocoon-system namespace and config/rbac (the cocoon-operator service account, its roles). */
export function applyOperatorRbac(cp: ControlPlane): void {
  const kubectl = join(cp.binDir, "kubectl");
  const apply = (...args: string[]) =>
    execFileSync(kubectl, ["--kubeconfig", cp.kubeconfigPath, "apply", ...args]);
  apply("-f", join(repoRoot, "config/default/namespace.yaml"));
  apply("-k", join(repoRoot, "config/rbac"));
}

/** A bearer token for the service account `namespace/name`, valid for `expirationSeconds`. */
export async function serviceAccountToken(
  conn: ApiConnection,
  namespace: string,
  name: string,
  expirationSeconds = 3600,
): Promise<string> {
  const res = await apiRequest(
    conn,
    "POST",
    `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
    {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds },
    },
  );
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.status.token as string;
}
