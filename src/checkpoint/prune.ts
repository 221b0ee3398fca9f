// keep-checkpoints: which of a set's checkpoints go once a newer one is Ready. Pure.

import type { CocoonCheckpoint } from "../apis/v1alpha1/types.ts";

/** A positive integer, or undefined for anything else (0 would delete the checkpoint just made). */
export function parseKeepCheckpoints(raw: string): number | undefined {
  if (!/^[1-9][0-9]{0,8}$/.test(raw)) return undefined;
  return Number(raw);
}

/** Newest first: creation time, then name (creation times have whole seconds). */
function newestFirst(a: CocoonCheckpoint, b: CocoonCheckpoint): number {
  const at = a.metadata.creationTimestamp ?? "";
  const bt = b.metadata.creationTimestamp ?? "";
  if (at !== bt) return at < bt ? 1 : -1;
  const an = a.metadata.name ?? "";
  const bn = b.metadata.name ?? "";
  return an < bn ? 1 : an > bn ? -1 : 0;
}

/** The Ready checkpoints beyond the `keep` newest; those being deleted or not yet Ready are left alone. */
export function checkpointsToPrune(
  checkpoints: readonly CocoonCheckpoint[],
  keep: number,
): CocoonCheckpoint[] {
  return checkpoints
    .filter((ck) => ck.status?.phase === "Ready" && !ck.metadata.deletionTimestamp)
    .sort(newestFirst)
    .slice(keep);
}
