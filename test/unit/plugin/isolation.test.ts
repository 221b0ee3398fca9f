// The plugin is a client tool: nothing the operator process loads may come from src/plugin/.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { it } from "node:test";

const repoRoot = resolve(import.meta.dirname, "../../..");

/** Every source file reachable from `entry` through relative static and dynamic imports. */
function importClosure(entry: string): Set<string> {
  const seen = new Set<string>();
  const pending = [entry];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/(?:from\s+|import\s*\(\s*)"(\.{1,2}\/[^"]+\.ts)"/g)) {
      pending.push(resolve(dirname(file), match[1] as string));
    }
  }
  return seen;
}

it("the operator's entry point imports nothing under src/plugin/", () => {
  const files = [...importClosure(resolve(repoRoot, "src/main.ts"))].map((f) => relative(repoRoot, f));
  assert.ok(files.includes("src/operator.ts"), "the walk follows the operator's imports");
  assert.deepEqual(
    files.filter((f) => f.startsWith("src/plugin/")),
    [],
  );
});

it("the plugin reaches the operator's client and registry code", () => {
  const files = [...importClosure(resolve(repoRoot, "src/plugin/main.ts"))].map((f) => relative(repoRoot, f));
  for (const shared of [
    "src/controller/client.ts",
    "src/controller/kubeconfig.ts",
    "src/registry/client.ts",
  ]) {
    assert.ok(files.includes(shared), shared);
  }
});
