// YAML rendering of the CRDs, shared by scripts/gen-crds.ts and the drift test.
import { Document } from "yaml";
import { crdFiles } from "./schema.ts";

/**
 * Laid out as controller-gen writes it (sorted keys, unindented sequences, literal blocks) so diffs
 * against upstream stay readable. Long CEL rules stay on one line; shared sub-schemas are written out
 * in full, never as YAML aliases.
 */
export function renderCRDs(): { file: string; yaml: string }[] {
  return crdFiles.map(({ file, crd }) => ({
    file,
    yaml: `---\n${new Document(crd, { aliasDuplicateObjects: false, sortMapEntries: true }).toString({
      blockQuote: "literal",
      indentSeq: false,
      lineWidth: 0,
    })}`,
  }));
}
