// The static import graph of the TypeScript sources, read from their text: what the import-structure
// test checks and what `make mutation` uses to run each mutated file against the tests that load it.
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** The files a source file imports through relative static and dynamic imports (type-only ones too). */
export function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*)"(\.{1,2}\/[^"]+\.ts)"/g)].map((m) =>
    resolve(dirname(file), m[1] as string),
  );
}

/**
 * The files a source file loads at run time: its imports and re-exports less those of types only
 * (`import type`, `export type`).
 */
export function valueImportsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [
    ...text.matchAll(
      /(?:^(?:import|export)\s+(?!type\b)[^;]*?from\s+|import\s*\(\s*)"(\.{1,2}\/[^"]+\.ts)"/gms,
    ),
  ].map((m) => resolve(dirname(file), m[1] as string));
}

/** Every source file reachable from `entry` through `edges` (default: every import). */
export function importClosure(entry: string, edges: (file: string) => string[] = importsOf): Set<string> {
  const seen = new Set<string>();
  const pending = [entry];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    pending.push(...edges(file));
  }
  return seen;
}
