// Step 8: a spec.nodeName pin that differs from the main's node moves the main across nodes.
import { CONTINUE, type Pass, type StepOutcome } from "../pass.ts";

export async function reconcileMigration(_pass: Pass): Promise<StepOutcome> {
  return CONTINUE;
}
