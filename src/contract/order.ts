// Go's sort.Strings order (byte-wise, not locale-aware): the order the Go operator writes lists in
// (delete-vm-names, status toolboxes, the rebuild history's keys) and takes pods in, so both
// operators write the same bytes.

import type { Pod } from "../apis/core.ts";

export function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The pods in name order (a new array). */
export function sortByName(pods: Iterable<Pod>): Pod[] {
  return [...pods].sort((a, b) => byteOrder(a.metadata.name ?? "", b.metadata.name ?? ""));
}
