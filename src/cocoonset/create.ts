// Creating an owned pod: the image rule first (managed pods only), then one create call. AlreadyExists
// is reported, not thrown: the pod of the same name is usually the old one still terminating, and
// each caller decides what that means (wait, ignore, or check for a collision). A pod this process
// created that the cache does not show yet is "pending": no registry read, no call, and the pass is
// marked as waiting for it (src/pass/expectations.ts). A successful create is recorded as expected.

import type { Pod } from "../apis/core.ts";
import { ANN_IMAGE, type Role } from "../contract/keys.ts";
import { vmNameOf } from "../contract/pod.ts";
import { isAlreadyExists } from "../controller/errors.ts";
import { PODS } from "../controller/resources.ts";
import type { Pass } from "../pass/pass.ts";
import { prepareSnapshotForCreate, type SnapshotForCreate } from "./imagerule.ts";

export type CreateOutcome = "created" | "exists" | "pending";

export interface ManagedPodCreate {
  role: Role;
  wantRestore: boolean;
  /** The pod as the builders make it, restore-marked or not. */
  build: (restore: boolean) => Pod;
}

/**
 * Creates the pod; a pod of that name already there is reported as "exists", one created earlier by
 * this process and not yet in the cache as "pending" (nothing is called).
 */
export async function createPod(pass: Pass, pod: Pod): Promise<CreateOutcome> {
  if (pass.awaitingCreate(pod.metadata.name ?? "")) return "pending";
  let created: Pod;
  try {
    created = await pass.deps.client.create<Pod>(PODS, pass.namespace, pod);
  } catch (error) {
    if (isAlreadyExists(error)) return "exists";
    throw error;
  }
  pass.deps.expectations?.created(pass.namespace, pod.metadata.name ?? "", created.metadata?.uid, pass.name);
  pass.deps.log.info({ cocoonset: `${pass.namespace}/${pass.name}`, pod: pod.metadata.name }, "created pod");
  return "created";
}

/**
 * A managed pod under the image rule: restore-marked when the rule says so, fresh otherwise. A
 * "pending" pod reads nothing (no snapshot).
 */
export async function createManagedPod(
  pass: Pass,
  request: ManagedPodCreate,
): Promise<{ outcome: CreateOutcome; snapshot?: SnapshotForCreate }> {
  const fresh = request.build(false);
  if (pass.awaitingCreate(fresh.metadata.name ?? "")) return { outcome: "pending" };
  const snapshot = await prepareSnapshotForCreate(pass, {
    podName: fresh.metadata.name ?? "",
    vmName: vmNameOf(fresh),
    image: fresh.metadata.annotations?.[ANN_IMAGE] ?? "",
    role: request.role,
    wantRestore: request.wantRestore,
  });
  const outcome = await createPod(pass, snapshot.restore ? request.build(true) : fresh);
  return { outcome, snapshot };
}
