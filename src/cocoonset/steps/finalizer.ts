// Step 3: the finalizer is in place before anything else happens, so no pod or tag this set makes
// can outlive it. Adding it ends the pass; the requeue starts a clean one.
import type { CocoonSet } from "../../apis/v1/types.ts";
import { FINALIZER_COCOONSET } from "../../contract/keys.ts";
import { COCOONSETS } from "../../controller/resources.ts";
import { CONTINUE, finish, type Pass, type StepOutcome } from "../../pass/pass.ts";

export async function ensureFinalizer(pass: Pass): Promise<StepOutcome> {
  const { cs } = pass;
  const finalizers = cs.metadata.finalizers ?? [];
  if (finalizers.includes(FINALIZER_COCOONSET)) return CONTINUE;
  await pass.deps.client.update<CocoonSet>(COCOONSETS, {
    ...cs,
    metadata: { ...cs.metadata, finalizers: [...finalizers, FINALIZER_COCOONSET] },
  });
  return finish({ requeue: true });
}
