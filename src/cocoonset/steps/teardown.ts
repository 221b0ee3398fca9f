// Step 2: a set being deleted loses its pods first, then its snapshot tags, then its finalizer.
import type { CocoonSet } from "../../apis/v1/types.ts";
import type { Result } from "../../controller/reconciler.ts";
import type { CocoonSetDeps } from "../pass.ts";

export async function teardown(_cs: CocoonSet, _deps: CocoonSetDeps, _signal: AbortSignal): Promise<Result> {
  return {};
}
