// Step 13: one pod per toolbox of the spec; removed toolboxes go.
import { CONTINUE, type Pass, type StepOutcome } from "../pass.ts";

export async function reconcileToolboxes(_pass: Pass): Promise<StepOutcome> {
  return CONTINUE;
}
