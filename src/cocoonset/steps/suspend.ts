// Step 6: spec.suspend=true hibernates every managed VM (and, with hibernatePolicy release, frees the seats).
import { CONTINUE, type Pass, type StepOutcome } from "../pass.ts";

export async function reconcileSuspend(_pass: Pass): Promise<StepOutcome> {
  return CONTINUE;
}
