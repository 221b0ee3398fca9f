// Rendering the install manifests with kubectl's kustomize (the control plane's kubectl), alone or as
// config/default with some of config/components, from a scratch overlay.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { controlPlaneBinDir } from "../env/controlplane.ts";

const repoRoot = resolve(import.meta.dirname, "../..");

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are arbitrary YAML
export type RenderedObject = any;

/** The objects `kubectl kustomize dir` renders (dir relative to the repository, or absolute). */
export function renderKustomization(dir: string): RenderedObject[] {
  const kubectl = join(controlPlaneBinDir(), "kubectl");
  const yaml = execFileSync(kubectl, ["kustomize", resolve(repoRoot, dir)], { encoding: "utf8" });
  return parseAllDocuments(yaml).map((doc) => {
    assert.deepEqual(doc.errors, [], `${dir} renders valid YAML`);
    return doc.toJS();
  });
}

/** config/default with the named components of config/components. */
export function renderWithComponents(...components: string[]): RenderedObject[] {
  const dir = mkdtempSync(join(tmpdir(), "cocoon-overlay-"));
  try {
    const config = relative(dir, join(repoRoot, "config"));
    const list = components.map((c) => `${config}/components/${c}`).join(", ");
    writeFileSync(join(dir, "kustomization.yaml"), `resources: [${config}/default]\ncomponents: [${list}]\n`);
    return renderKustomization(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
