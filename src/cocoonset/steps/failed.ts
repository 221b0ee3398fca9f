// Step 7: a main that vk-cocoon or the kubelet reports failed puts the set in Failed; recovery is noticed.
import { CONTINUE, type Pass, type StepOutcome } from "../pass.ts";

export async function reconcileFailedMain(_pass: Pass): Promise<StepOutcome> {
  return CONTINUE;
}
