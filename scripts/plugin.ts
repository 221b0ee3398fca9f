// `make plugin`: the kubectl-cocoon release (docs/kubectl-cocoon.md, Installing). Writes to
// dist/plugin/ (or --out DIR):
//   kubectl-cocoon.mjs                 the plugin bundled into one file, every runtime dependency inside
//   kubectl-cocoon-VERSION.tar.gz      the krew archive: bin/kubectl-cocoon, bin/kubectl_complete-cocoon,
//                                      lib/kubectl-cocoon.mjs
//   cocoon.yaml                        plugins/krew/cocoon.yaml with version, uri and the archive's sha256
// Flags: --version vX.Y.Z (default: package.json's), --uri-base URL (the release download base; the
// archive's uri is URL/VERSION/kubectl-cocoon-VERSION.tar.gz), --out DIR, --bundle-only.

import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { build, type Plugin } from "esbuild";
import { parseDocument } from "yaml";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
export const DEFAULT_URI_BASE = "https://github.com/ORG/cocoon-operator-ts/releases/download";
export const BUNDLE_NAME = "kubectl-cocoon.mjs";

/**
 * The kubeconfig loader requires yaml lazily through createRequire, which a bundler cannot follow
 * and which, beside a bundle, finds no node_modules: in the bundle it becomes a plain require of the
 * bundled copy (still loaded on first use).
 */
const bundledLazyYaml: Plugin = {
  name: "bundled-lazy-yaml",
  setup(b) {
    b.onLoad({ filter: /src[\\/]controller[\\/]kubeconfig\.ts$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      const lazy = 'createRequire(import.meta.url)("yaml")';
      if (!source.includes(lazy)) throw new Error(`${args.path} no longer loads yaml as ${lazy}`);
      return { contents: source.replace(lazy, 'require("yaml")'), loader: "ts" };
    });
  },
};

/** Bundles src/plugin/main.ts into `outfile` (ESM for Node 24; CommonJS packages get a require). */
export async function bundlePlugin(outfile: string): Promise<void> {
  await build({
    entryPoints: [join(root, "src/plugin/main.ts")],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    minify: true,
    legalComments: "eof",
    logLevel: "warning",
    banner: {
      js: 'import { createRequire as __cocoonCreateRequire } from "node:module"; const require = __cocoonCreateRequire(import.meta.url);',
    },
    plugins: [bundledLazyYaml],
  });
}

export interface PluginRelease {
  archive: string;
  manifest: string;
  sha256: string;
}

export async function buildPluginRelease(
  out: string,
  version: string,
  uriBase: string,
): Promise<PluginRelease> {
  mkdirSync(out, { recursive: true });
  const bundle = join(out, BUNDLE_NAME);
  await bundlePlugin(bundle);
  const stage = mkdtempSync(join(tmpdir(), "kubectl-cocoon-"));
  try {
    mkdirSync(join(stage, "bin"));
    mkdirSync(join(stage, "lib"));
    for (const launcher of ["kubectl-cocoon", "kubectl_complete-cocoon"]) {
      copyFileSync(join(root, "bin", launcher), join(stage, "bin", launcher));
      chmodSync(join(stage, "bin", launcher), 0o755);
    }
    copyFileSync(bundle, join(stage, "lib", BUNDLE_NAME));
    const archiveName = `kubectl-cocoon-${version}.tar.gz`;
    const archive = join(out, archiveName);
    // Reproducible: sorted names, fixed owner and time, gzip without the name and time of its input.
    const tar = spawnSync(
      "sh",
      [
        "-c",
        'tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - -C "$1" bin lib | gzip -n -9 > "$2"',
        "sh",
        stage,
        archive,
      ],
      { stdio: ["ignore", "inherit", "inherit"] },
    );
    if (tar.status !== 0) throw new Error(`tar exited ${tar.status}`);
    const sha256 = createHash("sha256").update(readFileSync(archive)).digest("hex");
    const manifest = join(out, "cocoon.yaml");
    writeFileSync(manifest, releaseManifest(version, `${uriBase}/${version}/${archiveName}`, sha256));
    return { archive, manifest, sha256 };
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

/** The repository's krew manifest with this release's version, uri and sha256. */
export function releaseManifest(version: string, uri: string, sha256: string): string {
  const doc = parseDocument(readFileSync(join(root, "plugins/krew/cocoon.yaml"), "utf8"));
  doc.setIn(["spec", "version"], version);
  const platforms = doc.getIn(["spec", "platforms"]) as { items: unknown[] };
  for (let i = 0; i < platforms.items.length; i++) {
    doc.setIn(["spec", "platforms", i, "uri"], uri);
    doc.setIn(["spec", "platforms", i, "sha256"], sha256);
  }
  return doc.toString();
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      version: { type: "string" },
      "uri-base": { type: "string", default: DEFAULT_URI_BASE },
      out: { type: "string", default: join(root, "dist/plugin") },
      "bundle-only": { type: "boolean", default: false },
    },
  });
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
  const version = values.version || `v${pkg.version}`;
  const out = resolve(values.out);
  if (values["bundle-only"]) {
    await bundlePlugin(join(out, BUNDLE_NAME));
    console.log(join(out, BUNDLE_NAME));
  } else {
    const release = await buildPluginRelease(out, version, values["uri-base"].replace(/\/+$/, ""));
    console.log(`${release.archive}\n${release.manifest}\nsha256 ${release.sha256}`);
  }
}
