// RFC 7386 JSON merge patch, as the API server applies application/merge-patch+json: objects merge
// key by key, null deletes a key, anything else (arrays included) replaces.

import { deepCopyJson } from "./deepcopy.ts";

export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return deepCopyJson(patch);
  const result: Record<string, unknown> =
    target !== null && typeof target === "object" && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}
