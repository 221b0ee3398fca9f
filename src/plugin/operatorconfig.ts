// The registry the operator itself uses, read from its installation (config/default): the
// Deployment cocoon-system/cocoon-operator, its manager container's OCI_REGISTRY (an env value, or
// the ConfigMap its envFrom names, which kustomize's configMapGenerator names with a hash suffix).
// Lets `status` and `snapshots` find the snapshots without a flag; a cluster where the operator is
// installed elsewhere, or credentials that cannot read it, fall back to OCI_REGISTRY.

import type { ObjectMeta } from "../apis/v1/types.ts";
import { ApiError, isNotFound } from "../controller/errors.ts";
import type { ResourceType } from "../controller/resources.ts";
import type { CommandContext } from "./command.ts";

export const OPERATOR_NAMESPACE = "cocoon-system";
export const OPERATOR_DEPLOYMENT = "cocoon-operator";
const REGISTRY_VARIABLE = "OCI_REGISTRY";

export const DEPLOYMENTS: ResourceType = {
  group: "apps",
  version: "v1",
  plural: "deployments",
  kind: "Deployment",
  namespaced: true,
};
export const CONFIGMAPS: ResourceType = {
  group: "",
  version: "v1",
  plural: "configmaps",
  kind: "ConfigMap",
  namespaced: true,
};

interface Container {
  name: string;
  env?: { name: string; value?: string }[];
  envFrom?: { configMapRef?: { name?: string } }[];
}
interface Deployment {
  metadata: ObjectMeta;
  spec?: { template?: { spec?: { containers?: Container[] } } };
}
interface ConfigMap {
  metadata: ObjectMeta;
  data?: Record<string, string>;
}

export type OperatorRegistry = { base: string; from: string } | { base: undefined; why: string };

/** The operator's OCI_REGISTRY as installed, or why it could not be read. */
export async function operatorRegistry(ctx: Pick<CommandContext, "client">): Promise<OperatorRegistry> {
  const where = `deployment ${OPERATOR_NAMESPACE}/${OPERATOR_DEPLOYMENT}`;
  try {
    const deployment = await ctx.client.get<Deployment>(DEPLOYMENTS, OPERATOR_NAMESPACE, OPERATOR_DEPLOYMENT);
    const containers = deployment.spec?.template?.spec?.containers ?? [];
    for (const container of containers) {
      const value = container.env?.find((e) => e.name === REGISTRY_VARIABLE)?.value;
      if (value) return { base: value, from: `${where}, container ${container.name}` };
    }
    for (const container of containers) {
      for (const source of container.envFrom ?? []) {
        const name = source.configMapRef?.name;
        if (!name) continue;
        const cm = await ctx.client.get<ConfigMap>(CONFIGMAPS, OPERATOR_NAMESPACE, name);
        const value = cm.data?.[REGISTRY_VARIABLE];
        if (value) return { base: value, from: `configmap ${OPERATOR_NAMESPACE}/${name}` };
      }
    }
    return { base: undefined, why: `${where} sets no ${REGISTRY_VARIABLE}` };
  } catch (err) {
    if (isNotFound(err)) return { base: undefined, why: `no ${where} (or its ConfigMap)` };
    if (err instanceof ApiError && err.status === 403)
      return { base: undefined, why: `your credentials cannot read ${where} and its ConfigMap` };
    throw err;
  }
}
