// Activity reported through a coordination.k8s.io Lease per set (docs/idle.md, Reporting activity):
// an agent or a gateway that may renew that one Lease (config/samples/activity-reporter.yaml grants
// get/update/patch on it by name, nothing else) keeps the set from going idle without any right on
// the CocoonSet. The operator creates the Lease for each set with suspend-after-idle (owned by the
// set, so it goes with it) and reads spec.renewTime from a watch of such Leases; a renewal passes the
// watch to the set's pass, which re-arms its idle deadline.

import type { CocoonSet, ObjectMeta } from "../apis/v1/types.ts";
import type { Clock } from "../clock.ts";
import { LABEL_COCOONSET } from "../contract/keys.ts";
import { createInformer, type Informer, stripManagedFields } from "../controller/cache.ts";
import type { Client, WatchClient } from "../controller/client.ts";
import { ApiError, isAlreadyExists } from "../controller/errors.ts";
import type { Request } from "../controller/reconciler.ts";
import { LEASES } from "../controller/resources.ts";
import type { ActivitySource } from "../pass/pass.ts";
import { parseRFC3339 } from "../rfc3339.ts";

export interface ActivityLease {
  metadata: ObjectMeta;
  spec?: { holderIdentity?: string; renewTime?: string };
}

/** The set's activity Lease: `cocoonset-activity-<set>`, in the set's namespace. */
export function activityLeaseName(setName: string): string {
  return `cocoonset-activity-${setName}`;
}

export class ActivityLeases implements ActivitySource {
  readonly informer: Informer<ActivityLease>;

  constructor(client: WatchClient, opts: { clock?: Clock; namespace?: string } = {}) {
    // Only the Leases the operator labels with their set: other Leases (leader election) are not cached.
    this.informer = createInformer<ActivityLease>(client, LEASES, {
      ...opts,
      labelSelector: LABEL_COCOONSET,
      transform: stripManagedFields,
    });
  }

  private lease(cs: CocoonSet): ActivityLease | undefined {
    return this.informer.get(cs.metadata.namespace ?? "", activityLeaseName(cs.metadata.name ?? ""));
  }

  lastUseMs(cs: CocoonSet): number | undefined {
    return parseRFC3339(this.lease(cs)?.spec?.renewTime);
  }

  async ensureReportable(cs: CocoonSet, client: Client): Promise<void> {
    if (!this.informer.hasSynced() || this.lease(cs)) return;
    await createActivityLease(client, cs);
  }
}

/**
 * One LIST of the labelled Leases: false when the operator may not (a ClusterRole from before
 * activity Leases, 403), so it runs on the annotation alone instead of waiting for a cache that
 * cannot sync. Anything else is thrown.
 */
export async function mayListActivityLeases(client: Client, namespace: string | undefined): Promise<boolean> {
  try {
    await client.list(LEASES, namespace, { labelSelector: LABEL_COCOONSET, limit: 1 });
    return true;
  } catch (err) {
    if (err instanceof ApiError && err.status === 403) return false;
    throw err;
  }
}

/** The set a Lease reports for, from its label. */
export function setOfLease(lease: ActivityLease): Request[] {
  const set = lease.metadata.labels?.[LABEL_COCOONSET];
  return set ? [{ namespace: lease.metadata.namespace ?? "", name: set }] : [];
}

/** Creates the set's activity Lease, owned by the set; one that exists already is fine. */
async function createActivityLease(client: Client, cs: CocoonSet): Promise<void> {
  const namespace = cs.metadata.namespace ?? "";
  const name = cs.metadata.name ?? "";
  const lease: ActivityLease & { apiVersion: string; kind: string } = {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: {
      name: activityLeaseName(name),
      namespace,
      labels: { [LABEL_COCOONSET]: name },
      ownerReferences: [{ apiVersion: cs.apiVersion, kind: cs.kind, name, uid: cs.metadata.uid ?? "" }],
    },
    spec: {},
  };
  try {
    await client.create(LEASES, namespace, lease);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}
