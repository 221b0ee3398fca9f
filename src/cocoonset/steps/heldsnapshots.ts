// A suspended set edited on a field its snapshots depend on (backend, OS, snapshot compatibility
// class) keeps them: nothing is woken, rebuilt or dropped, and the set reports Failed with what the
// snapshots were taken under, what the spec asks for, and what to set back. Setting the edit back
// resumes the set from the same snapshots. Step 6 asks this once its gate has confirmed the suspend,
// or, for VMs a release suspend deleted the pods of, before it would create or settle anything; on a
// resumed set this step runs before step 7, so neither step 9 wakes a released VM, nor step 10 a
// hibernated pod, nor step 11 rebuilds a pod over such a snapshot.

import { CONTINUE, finish, type Pass, type StepOutcome } from "../../pass/pass.ts";
import { reclaimRecord, setEvent } from "../../pass/writes.ts";
import {
  type HeldSnapshot,
  heldReleasedSnapshots,
  heldSnapshots,
  heldSnapshotsMessage,
  REASON_SNAPSHOT_INCOMPATIBLE,
} from "../decide/heldsnapshots.ts";
import { writeStatus } from "./status.ts";

/** Between steps 6 and 7: a resumed set whose snapshots the spec could not restore stays Failed. */
export async function holdIncompatibleSnapshots(pass: Pass): Promise<StepOutcome> {
  const held = [...heldSnapshots(pass.cs, pass.pods), ...heldReleased(pass)];
  if (held.length === 0) return CONTINUE;
  await reportHeldSnapshots(pass, held);
  return finish();
}

/**
 * Phase Failed, the cause in the Ready condition and a Warning; the spec edit that sets it back (a new
 * generation) brings the next pass. The Warning goes out when the status changes, not on every pass.
 */
export async function reportHeldSnapshots(pass: Pass, held: readonly HeldSnapshot[]): Promise<void> {
  const message = heldSnapshotsMessage(held);
  const failure = { reason: REASON_SNAPSHOT_INCOMPATIBLE, message };
  if (await writeStatus(pass, "Failed", failure)) {
    setEvent(pass, "Warning", REASON_SNAPSHOT_INCOMPATIBLE, message);
  }
}

/** The released VMs whose wake the spec would build under a value their snapshot cannot restore under. */
export function heldReleased(pass: Pass): HeldSnapshot[] {
  return heldReleasedSnapshots(pass.cs, pass.pods, reclaimRecord(pass));
}
