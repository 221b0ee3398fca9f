// Step 5: the set's generation is stamped on every owned pod, so vk-cocoon can echo it back as
// lifecycle-observed-generation: a completion signal that is a counter, immune to clock skew.

import { ANN_COCOONSET_GENERATION } from "../../contract/keys.ts";
import { byteOrder } from "../../contract/order.ts";
import { forEachLimited } from "../../pass/limit.ts";
import { CONTINUE, type Pass, type StepOutcome } from "../../pass/pass.ts";
import { FAN_OUT_LIMIT, patchPodAnnotations } from "../../pass/writes.ts";

/** The pods are stamped together (nothing orders them among themselves), all before step 6 runs. */
export async function stampGeneration(pass: Pass): Promise<StepOutcome> {
  const generation = String(pass.generation);
  const names = [...pass.pods.all.keys()].sort(byteOrder);
  await forEachLimited(names, FAN_OUT_LIMIT, async (name) => {
    const pod = pass.pods.all.get(name);
    // patchPodAnnotations makes no call for a pod that already carries this generation.
    if (pod) await patchPodAnnotations(pass, pod, { [ANN_COCOONSET_GENERATION]: generation });
  });
  return CONTINUE;
}
