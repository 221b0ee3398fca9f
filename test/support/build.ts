// The compiled operator as the image lays it out (package.json, node_modules, dist/ side by side):
// `tsc -p tsconfig.build.json` into a directory of the caller's, so a test never touches the tree's
// own dist/. Used by the build test and by the end-to-end test that runs the operator as users do.

import { execFileSync } from "node:child_process";
import { copyFileSync, symlinkSync } from "node:fs";
import { join, resolve } from "node:path";

export const repoRoot = resolve(import.meta.dirname, "../..");

/** Node flags of the image's entry point (Dockerfile): compiled JavaScript only, no type stripping. */
export const IMAGE_NODE_FLAGS = ["--max-semi-space-size=1", "--no-strip-types"];

/** Builds into `<dir>/dist` beside a copy of package.json and a link to node_modules; returns dist/main.js. */
export function buildImageLayout(dir: string): string {
  copyFileSync(join(repoRoot, "package.json"), join(dir, "package.json"));
  symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"), "dir");
  const tsc = join(repoRoot, "node_modules/typescript/lib/tsc.js");
  try {
    execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json", "--outDir", join(dir, "dist")], {
      cwd: repoRoot,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`tsc -p tsconfig.build.json failed:\n${stdout ?? ""}${stderr ?? ""}`);
  }
  return join(dir, "dist", "main.js");
}
