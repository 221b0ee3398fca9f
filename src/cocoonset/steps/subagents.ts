// Step 12: sub-agents 1..replicas exist, forked from the main on its node; extras go.
import { CONTINUE, type Pass, type StepOutcome } from "../pass.ts";

export async function reconcileSubAgents(_pass: Pass): Promise<StepOutcome> {
  return CONTINUE;
}
