// Creating an owned pod: the image rule first (managed pods only), then one create call. AlreadyExists
// is reported, not thrown: the pod of the same name is usually the old one still terminating, and
// each caller decides what that means (wait, ignore, or check for a collision).

import type { Pod } from "../apis/core.ts";
import { ANN_IMAGE, type Role } from "../contract/keys.ts";
import { vmNameOf } from "../contract/pod.ts";
import { isAlreadyExists } from "../controller/errors.ts";
import { PODS } from "../controller/resources.ts";
import { prepareSnapshotForCreate, type SnapshotForCreate } from "./imagerule.ts";
import type { Pass } from "./pass.ts";

export type CreateOutcome = "created" | "exists";

export interface ManagedPodCreate {
  role: Role;
  wantRestore: boolean;
  /** The pod as the builders make it, restore-marked or not. */
  build: (restore: boolean) => Pod;
}

/** Creates the pod; a pod of that name already there is reported as "exists". */
export async function createPod(pass: Pass, pod: Pod): Promise<CreateOutcome> {
  try {
    await pass.deps.client.create<Pod>(PODS, pass.namespace, pod);
  } catch (error) {
    if (isAlreadyExists(error)) return "exists";
    throw error;
  }
  pass.deps.log.info({ cocoonset: `${pass.namespace}/${pass.name}`, pod: pod.metadata.name }, "created pod");
  return "created";
}

/** A managed pod under the image rule: restore-marked when the rule says so, fresh otherwise. */
export async function createManagedPod(
  pass: Pass,
  request: ManagedPodCreate,
): Promise<{ outcome: CreateOutcome; snapshot: SnapshotForCreate }> {
  const fresh = request.build(false);
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
