// Step 10: spec.suspend=false wakes the pods and settles the reclaim record once.
import { CONTINUE, type Pass, type StepOutcome } from "../pass.ts";

export async function reconcileUnsuspend(_pass: Pass): Promise<StepOutcome> {
  return CONTINUE;
}
