// Step 3: the finalizer is in place before anything else happens, so no pod or tag this set makes
// can outlive it. The pass goes on with the set as the update returned it: nothing the classification
// of step 4 read has changed, and a pass that ended here would only put the set at the back of the
// queue for the same work.
import type { CocoonSet } from "../../apis/v1/types.ts";
import { FINALIZER_COCOONSET } from "../../contract/keys.ts";
import { COCOONSETS } from "../../controller/resources.ts";
import { CONTINUE, type Pass, type StepOutcome } from "../../pass/pass.ts";

export async function ensureFinalizer(pass: Pass): Promise<StepOutcome> {
  const { cs } = pass;
  const finalizers = cs.metadata.finalizers ?? [];
  if (finalizers.includes(FINALIZER_COCOONSET)) return CONTINUE;
  const updated = await pass.deps.client.update<CocoonSet>(COCOONSETS, {
    ...cs,
    metadata: { ...cs.metadata, finalizers: [...finalizers, FINALIZER_COCOONSET] },
  });
  // The rest of the pass sees the set as stored.
  cs.metadata.finalizers = updated.metadata.finalizers ?? [...finalizers, FINALIZER_COCOONSET];
  cs.metadata.resourceVersion = updated.metadata.resourceVersion;
  return CONTINUE;
}
