// Step 11: the main agent (slot 0) exists, matches its spec and is Ready before anything else scales.
import { CONTINUE, type Pass, type StepOutcome } from "../pass.ts";

export async function reconcileMain(_pass: Pass): Promise<StepOutcome> {
  return CONTINUE;
}
