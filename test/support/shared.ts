// The read-only shared/ folder beside the repository (specs, reference CRDs and samples). CI lays a
// copy of it next to its fresh clone, so it is found relative to the repo, never by absolute path.
import { resolve } from "node:path";

export const sharedDir = resolve(import.meta.dirname, "../../../shared");
export const referenceCrdsDir = resolve(sharedDir, "reference/crds");
export const referenceSamplesDir = resolve(sharedDir, "reference/samples");
