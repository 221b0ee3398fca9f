// CocoonGuestPolicies through the raw API, for the integration tests, the reliability runs and the
// benchmarks: create or edit one, and the policy every settled-pass measurement names.

import type { CocoonGuestPolicySpec } from "../../src/apis/v1alpha1/types.ts";
import { type ApiConnection, apiRequest } from "../env/testenv.ts";

export const guestPoliciesPath = (ns: string): string =>
  `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocoonguestpolicies`;

/** The refresh, a PreHibernate hook and a PostClone/PostWake hook: something at every point but a claim. */
export const EVERY_POINT_POLICY: CocoonGuestPolicySpec = {
  refresh: { afterClone: true, afterWake: true },
  hooks: [
    { name: "flush", on: ["PreHibernate"], exec: { command: ["sync"] } },
    { name: "resync", on: ["PostClone", "PostWake"], exec: { command: ["true"] } },
  ],
};

/** Creates the policy, or replaces its spec when it exists; throws on any other answer. */
export async function putGuestPolicy(
  conn: ApiConnection,
  ns: string,
  name: string,
  spec: CocoonGuestPolicySpec,
): Promise<void> {
  const path = `${guestPoliciesPath(ns)}/${name}`;
  const existing = await apiRequest(conn, "GET", path);
  const res =
    existing.status === 200
      ? await apiRequest(conn, "PATCH", path, { spec }, "application/merge-patch+json")
      : await apiRequest(conn, "POST", guestPoliciesPath(ns), {
          apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
          kind: "CocoonGuestPolicy",
          metadata: { name, namespace: ns },
          spec,
        });
  if (res.status !== 200 && res.status !== 201)
    throw new Error(`put CocoonGuestPolicy ${ns}/${name}: ${res.status} ${JSON.stringify(res.body)}`);
}
