// The teardown's turn under the hold rule (src/holds.ts). A restore's copies run in its own
// controller, outside the set's pass: a tag collected while the restore still holds the set could be
// written again after the collection, and no object would record it. So the teardown collects only
// once the API server's set shows no restore hold; the restore, seeing the set being deleted, stops
// and lets go, and the tags it copied are in the reclaim record the teardown stashed.

import type { CocoonSet } from "../apis/v1/types.ts";
import type { Result } from "../controller/reconciler.ts";
import { COCOONSETS } from "../controller/resources.ts";
import { heldAgainst } from "../holds.ts";
import { type Pass, REQUEUE_POLL_MS } from "../pass/pass.ts";
import { setEvent } from "../pass/writes.ts";

/** A result to wait with while another holds the set, or undefined when the teardown may collect. */
export async function waitForHolder(pass: Pass): Promise<Result | undefined> {
  const fresh = await pass.deps.client.get<CocoonSet>(COCOONSETS, pass.namespace, pass.name);
  const held = heldAgainst(fresh, "teardown");
  if (held) {
    setEvent(pass, "Normal", held.reason, `teardown waits to collect snapshot tags: ${held.message}`);
    return { requeueAfterMs: REQUEUE_POLL_MS };
  }
  // The names to collect are read from the set: a cache that does not show the server's set yet may
  // lack VMs the last holder recorded.
  if (fresh.metadata.resourceVersion !== pass.cs.metadata.resourceVersion) {
    return { requeueAfterMs: REQUEUE_POLL_MS };
  }
  return undefined;
}
