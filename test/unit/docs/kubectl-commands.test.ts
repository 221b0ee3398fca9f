// Commands the docs and `make run` print must work on a real cluster: kubectl resolves the short name
// `cs` to the built-in ComponentStatuses before any CRD's short name, so `kubectl get cs` never lists
// CocoonSets there.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

const root = join(import.meta.dirname, "..", "..", "..");
const BUILT_IN_SHORT_NAMES = new Set(["cs"]);

function userFacingFiles(): string[] {
  const docs = readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => join("docs", f));
  return ["README.md", ...docs, join("scripts", "run.ts")];
}

/** The resource arguments of every `kubectl get <resources>` in text. */
function getResources(text: string): string[][] {
  return [...text.matchAll(/kubectl\s+(?:-n\s+\S+\s+)?get\s+([a-z0-9.,/-]+)/g)].map((m) =>
    (m[1] ?? "").split(","),
  );
}

describe("kubectl commands in docs and make run", () => {
  it("the parser sees the shadowed short name", () => {
    assert.deepEqual(getResources("run `.sandbox/kubectl get cs,pods -A`"), [["cs", "pods"]]);
  });

  it("never ask for a short name that a built-in resource shadows", () => {
    const offending: string[] = [];
    for (const file of userFacingFiles()) {
      const text = readFileSync(join(root, file), "utf8");
      for (const resources of getResources(text)) {
        if (resources.some((r) => BUILT_IN_SHORT_NAMES.has(r)))
          offending.push(`${file}: ${resources.join(",")}`);
      }
    }
    assert.deepEqual(offending, []);
  });
});
