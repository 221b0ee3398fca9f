// Writes config/crd/bases/*.yaml from src/apis/v1/schema.ts and src/apis/v1alpha1/schema.ts.
// Usage: node scripts/gen-crds.ts [--check]   (--check: exit 1 when the committed files differ)
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { renderCRDs } from "../src/apis/v1/render.ts";
import { v1alpha1CrdFiles } from "../src/apis/v1alpha1/schema.ts";

const outDir = join(import.meta.dirname, "..", "config", "crd", "bases");
const check = process.argv.includes("--check");
const stale: string[] = [];

for (const { file, yaml } of [...renderCRDs(), ...renderCRDs(v1alpha1CrdFiles)]) {
  const path = join(outDir, file);
  if (check) {
    const committed = await readFile(path, "utf8").catch(() => "");
    if (committed !== yaml) stale.push(path);
  } else {
    await writeFile(path, yaml);
    process.stdout.write(`wrote ${path}\n`);
  }
}

if (stale.length > 0) {
  process.stderr.write(`out of date (run npm run gen:crds): ${stale.join(", ")}\n`);
  process.exitCode = 1;
}
