// Step 9: a main released by a hibernatePolicy=release suspend is recreated from its snapshot.
import { CONTINUE, type Pass, type StepOutcome } from "../pass.ts";

export async function reconcileWake(_pass: Pass): Promise<StepOutcome> {
  return CONTINUE;
}
