// Whether vk-cocoon pushes a routine `:latest` snapshot of a VM at pod delete;
// the operator uses the same decision when it garbage-collects `:latest` tags.

import { ROLE_MAIN, type Role } from "./keys.ts";

/** never → false; main-only → main only; always, empty and unknown values → true. */
export function shouldSnapshotVM(policy: string, role: Role | string): boolean {
  if (policy === "never") return false;
  if (policy === "main-only") return role === ROLE_MAIN;
  return true;
}
