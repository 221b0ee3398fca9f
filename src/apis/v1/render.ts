// YAML rendering of the CRDs, shared by scripts/gen-crds.ts and the drift test.
import { Document } from "yaml";
import type { CustomResourceDefinition } from "./openapi.ts";
import { crdFiles } from "./schema.ts";

/**
 * Laid out as controller-gen writes it (sorted keys, unindented sequences, literal blocks) so diffs
 * against upstream stay readable. Long CEL rules stay on one line; shared sub-schemas are written out
 * in full, never as YAML aliases.
 */
export function renderCRDs(
  files: { file: string; crd: CustomResourceDefinition }[] = crdFiles,
): { file: string; yaml: string }[] {
  return files.map(({ file, crd }) => ({
    file,
    yaml: `---\n${new Document(crd, { aliasDuplicateObjects: false, sortMapEntries: true }).toString({
      blockQuote: "literal",
      indentSeq: false,
      lineWidth: 0,
    })}`,
  }));
}
