// The import structure of src/: its top-level rooms (folders, and the files directly under src/) form
// no cycle, so each room can be read, tested and changed knowing only the rooms below it; and the
// plugin, a client tool, neither loads into the operator nor reaches a reconciler.
import assert from "node:assert/strict";
import { globSync, readFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import { describe, it } from "node:test";
import { importClosure, importsOf, valueImportsOf } from "../support/imports.ts";

const repoRoot = resolve(import.meta.dirname, "../..");
const srcRoot = resolve(repoRoot, "src");

/** The room a file of src/ belongs to: its top-level folder ("cocoonset/") or, directly under src/, itself. */
export function roomOf(file: string): string {
  const parts = relative(srcRoot, file).split("/");
  return parts.length === 1 ? (parts[0] as string) : `${parts[0]}/`;
}

/** Room-to-room edges, each with the file imports that make it. */
export function roomEdges(files: Iterable<string>): Map<string, Map<string, string[]>> {
  const edges = new Map<string, Map<string, string[]>>();
  for (const file of files) {
    const from = roomOf(file);
    for (const target of importsOf(file)) {
      const to = roomOf(target);
      if (to === from) continue;
      const out = edges.get(from) ?? new Map<string, string[]>();
      edges.set(from, out);
      const via = out.get(to) ?? [];
      out.set(to, via);
      via.push(`${relative(srcRoot, file)} -> ${relative(srcRoot, target)}`);
    }
  }
  return edges;
}

/** The cycles of a graph, one per strongly connected component of more than one node (Tarjan). */
export function cyclesOf(edges: Map<string, Map<string, string[]>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const to of edges.get(node)?.keys() ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node) as number, low.get(to) as number));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node) as number, index.get(to) as number));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string | undefined;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) components.push(component.sort());
    }
  };
  const nodes = new Set([...edges.keys(), ...[...edges.values()].flatMap((out) => [...out.keys()])]);
  for (const node of [...nodes].sort()) if (!index.has(node)) visit(node);
  return components;
}

/** The imports that close each cycle, as lines a reader can follow. */
function describeCycles(edges: Map<string, Map<string, string[]>>, cycles: string[][]): string {
  const lines: string[] = [];
  for (const cycle of cycles) {
    lines.push(`cycle between ${cycle.join(", ")}:`);
    for (const from of cycle) {
      for (const [to, via] of edges.get(from) ?? []) {
        if (cycle.includes(to)) lines.push(`  ${from} -> ${to}: ${via.join("; ")}`);
      }
    }
  }
  return lines.join("\n");
}

const sourceFiles = globSync("src/**/*.ts", { cwd: repoRoot }).map((f) => resolve(repoRoot, f));

describe("the rooms of src/", () => {
  it("import one another without a cycle", () => {
    const edges = roomEdges(sourceFiles);
    const cycles = cyclesOf(edges);
    assert.deepEqual(cycles, [], describeCycles(edges, cycles));
  });

  it("the check finds a cycle between two rooms and one through three", () => {
    const edge = (...pairs: [string, string][]) => {
      const edges = new Map<string, Map<string, string[]>>();
      for (const [from, to] of pairs) {
        const out = edges.get(from) ?? new Map<string, string[]>();
        edges.set(from, out);
        out.set(to, []);
      }
      return edges;
    };
    assert.deepEqual(cyclesOf(edge(["a/", "b/"], ["b/", "a/"], ["b/", "c/"])), [["a/", "b/"]]);
    assert.deepEqual(cyclesOf(edge(["a/", "b/"], ["b/", "c/"], ["c/", "a/"])), [["a/", "b/", "c/"]]);
    assert.deepEqual(cyclesOf(edge(["a/", "b/"], ["b/", "c/"], ["a/", "c/"])), []);
  });

  it("the pass contract knows no step-composing room and no feature", () => {
    const edges = roomEdges(sourceFiles);
    const below = [...(edges.get("pass/")?.keys() ?? [])];
    for (const room of ["cocoonset/", "checkpoint/", "idle/", "hibernation/", "plugin/", "operator.ts"]) {
      assert.ok(!below.includes(room), `pass/ imports ${room}: ${edges.get("pass/")?.get(room)?.join("; ")}`);
    }
  });
});

describe("the pure decisions", () => {
  const pure = [
    ...globSync("src/cocoonset/decide/*.ts", { cwd: repoRoot }),
    "src/hibernation/decide.ts",
    "src/hibernation/status.ts",
    "src/idle/policy.ts",
    "src/idle/deadlines.ts",
    "src/idle/duration.ts",
  ];

  it("load no module that talks to the API server or the registry, nor any pass step or write", () => {
    const io = (f: string) =>
      f.startsWith("src/registry/") ||
      f.startsWith("src/net/") ||
      (f.startsWith("src/controller/") && f !== "src/controller/deepcopy.ts") ||
      f === "src/pass/writes.ts" ||
      (f.startsWith("src/cocoonset/") && !f.startsWith("src/cocoonset/decide/"));
    for (const file of pure) {
      const loaded = [...importClosure(resolve(repoRoot, file), valueImportsOf)].map((f) =>
        relative(repoRoot, f),
      );
      assert.deepEqual(loaded.filter(io), [], `${file} loads I/O modules`);
    }
  });

  it("the check sees a value import through a chain, and not a type-only one", () => {
    const steps = [...importClosure(resolve(srcRoot, "cocoonset/steps/status.ts"), valueImportsOf)];
    assert.ok(
      steps.includes(resolve(srcRoot, "pass/writes.ts")),
      "steps/status.ts writes through pass/writes.ts",
    );
    const plan = [...importClosure(resolve(srcRoot, "cocoonset/decide/migrationplan.ts"), valueImportsOf)];
    assert.ok(!plan.includes(resolve(srcRoot, "pass/pass.ts")), "a type import is not loaded");
    assert.ok(
      importsOf(resolve(srcRoot, "cocoonset/decide/migrationplan.ts")).includes(
        resolve(srcRoot, "pass/pass.ts"),
      ),
    );
  });
});

describe("the plugin", () => {
  it("is not loaded by the operator's entry point", () => {
    const files = [...importClosure(resolve(srcRoot, "main.ts"))].map((f) => relative(repoRoot, f));
    assert.ok(files.includes("src/operator.ts"), "the walk follows the operator's imports");
    assert.deepEqual(
      files.filter((f) => f.startsWith("src/plugin/")),
      [],
    );
  });

  it("reaches the operator's client and registry code, and no reconciler or pass step", () => {
    const files = [...importClosure(resolve(srcRoot, "plugin/main.ts"))].map((f) => relative(repoRoot, f));
    for (const shared of [
      "src/controller/client.ts",
      "src/controller/kubeconfig.ts",
      "src/registry/client.ts",
    ]) {
      assert.ok(files.includes(shared), shared);
    }
    const reconcilers = files.filter(
      (f) => f.endsWith("/reconciler.ts") || f.startsWith("src/pass/") || f.includes("/steps/"),
    );
    assert.deepEqual(reconcilers, []);
  });
});

describe("the SDK", () => {
  // A library users install: this project's client and the pure keys and judges, never the operator
  // runtime (manager, informers, reconcilers, metrics) nor the plugin, and no npm package but yaml.
  const ALLOWED = [
    /^src\/sdk\//,
    /^src\/apis\//,
    /^src\/net\//,
    /^src\/contract\//,
    /^src\/controller\/(client|exec|kubeconfig|errors|resources|deepcopy|listdecoder|ratelimit)\.ts$/,
    /^src\/(clock|rfc3339|builtins|holds)\.ts$/,
    /^src\/idle\/(policy|duration)\.ts$/,
    /^src\/pool\/(keys|decide|names|bookkeeping)\.ts$/,
    /^src\/(checkpoint|restore|guest)\/keys\.ts$/,
  ];
  const files = [...importClosure(resolve(srcRoot, "sdk/index.ts"))].map((f) => relative(repoRoot, f));

  it("loads only the client, the API types and the pure keys and judges", () => {
    assert.ok(files.includes("src/controller/client.ts"), "the walk follows the SDK's imports");
    assert.deepEqual(
      files.filter((f) => !ALLOWED.some((re) => re.test(f))),
      [],
    );
  });

  it("imports no npm package but yaml", () => {
    const packages = new Set<string>();
    for (const file of files) {
      const text = readFileSync(resolve(repoRoot, file), "utf8");
      for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*)"([^".][^"]*)"/g)) {
        const name = m[1] as string;
        if (!name.startsWith("node:")) packages.add(name);
      }
    }
    assert.deepEqual([...packages], ["yaml"]);
  });
});
