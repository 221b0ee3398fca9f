// `make mutation` (not part of `make test`): StrykerJS mutation testing of the rooms that hold safety
// rules. Each source file of a room is mutated and every mutant is run against the unit tests that
// load that file (by the static import graph: a test that never loads a file cannot catch its
// mutants). Stryker's command runner runs them, since Node's own test runner has no Stryker plugin;
// the tests share one process (`--test-isolation=none`) because starting a process per test file,
// per mutant, would cost most of the run. Writes reports/mutation/ROOM/FILE.json (Stryker's
// mutation-testing report) and reports/mutation/summary.md: the score per room and per file, and
// every mutant that survived, by file and line, for a test to kill.
// Usage: npm run mutation -- [ROOM ...] [--concurrency N] [--files GLOB]   (rooms: see ROOMS; default
// all; --files mutates only the room's sources that match, to check the tests written for survivors)

import { globSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Stryker } from "@stryker-mutator/core";
import { importClosure, valueImportsOf } from "../test/support/imports.ts";

type MutantResult = Awaited<ReturnType<Stryker["runMutationTest"]>>[number];

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const out = resolve(root, "reports/mutation");

/** Each room: the sources mutated. */
export const ROOMS: Record<string, string> = {
  pass: "src/pass/**/*.ts",
  "cocoonset/decide": "src/cocoonset/decide/**/*.ts",
  checkpoint: "src/checkpoint/**/*.ts",
  restore: "src/restore/**/*.ts",
  pool: "src/pool/**/*.ts",
};

/** Killed (a test failed) or timed out (a test hung): the mutant was caught. */
const CAUGHT = new Set(["Killed", "Timeout"]);
/** Mutants that count: caught, survived, or never run by any test. */
const COUNTED = new Set([...CAUGHT, "Survived", "NoCoverage"]);

interface FileScore {
  file: string;
  tests: number;
  caught: number;
  counted: number;
  survivors: MutantResult[];
}

interface RoomScore {
  room: string;
  files: FileScore[];
  seconds: number;
}

/** For each unit test file, the source files it loads at run time. */
function unitTestClosures(): Map<string, Set<string>> {
  const tests = globSync("test/unit/**/*.test.ts", { cwd: root }).sort();
  return new Map(tests.map((test) => [test, importClosure(resolve(root, test), valueImportsOf)]));
}

async function mutateFile(
  room: string,
  file: string,
  tests: string[],
  concurrency: number,
): Promise<FileScore> {
  const report = resolve(
    out,
    room.replaceAll("/", "-"),
    `${file.replace(/^src\//, "").replaceAll("/", "-")}.json`,
  );
  const results = await new Stryker({
    testRunner: "command",
    // No test loads the file: every mutant survives, and the summary says why.
    commandRunner: {
      command:
        tests.length === 0
          ? "true"
          : `${process.execPath} --test --test-isolation=none ${tests.map((t) => `'${t}'`).join(" ")}`,
    },
    mutate: [file],
    coverageAnalysis: "off",
    concurrency,
    reporters: ["json"],
    jsonReporter: { fileName: relative(root, report) },
    tempDirName: ".stryker-tmp",
    // The tests run the .ts sources as they are; there is no tsconfig for Stryker to rewrite (and
    // TypeScript 7 has no JavaScript API to rewrite it with).
    tsconfigFile: "stryker-has-no-tsconfig.json",
    ignorePatterns: [".sandbox", ".testenv", "dist", "reports", "bench"],
    cleanTempDir: "always",
  }).runMutationTest();
  const counted = results.filter((r) => COUNTED.has(r.status));
  return {
    file,
    tests: tests.length,
    caught: counted.filter((r) => CAUGHT.has(r.status)).length,
    counted: counted.length,
    survivors: counted.filter((r) => !CAUGHT.has(r.status)),
  };
}

async function runRoom(room: string, concurrency: number, only?: string): Promise<RoomScore> {
  const started = Date.now();
  const closures = unitTestClosures();
  const filter = only ? new Set(globSync(only, { cwd: root })) : undefined;
  const files = globSync(ROOMS[room] as string, { cwd: root })
    .filter((file) => !filter || filter.has(file))
    .sort();
  const scores: FileScore[] = [];
  for (const file of files) {
    const absolute = resolve(root, file);
    const tests = [...closures].filter(([, loaded]) => loaded.has(absolute)).map(([test]) => test);
    process.stdout.write(`${file}: ${tests.length} test files\n`);
    const score = await mutateFile(room, file, tests, concurrency);
    process.stdout.write(`${file}: ${score.caught}/${score.counted} caught\n`);
    scores.push(score);
  }
  return { room, files: scores, seconds: Math.round((Date.now() - started) / 1000) };
}

const percent = (caught: number, counted: number) =>
  counted === 0 ? "-" : `${((100 * caught) / counted).toFixed(1)} %`;

function summary(rooms: RoomScore[]): string {
  const total = (files: FileScore[], key: "caught" | "counted") => files.reduce((n, f) => n + f[key], 0);
  const lines = [
    "# Mutation scores",
    "",
    "| room | caught | mutants | score | time |",
    "|---|---|---|---|---|",
    ...rooms.map((r) => {
      const caught = total(r.files, "caught");
      const counted = total(r.files, "counted");
      return `| ${r.room} | ${caught} | ${counted} | ${percent(caught, counted)} | ${r.seconds} s |`;
    }),
    "",
  ];
  for (const r of rooms) {
    lines.push(
      `## ${r.room}`,
      "",
      "| file | unit test files | caught | mutants | score |",
      "|---|---|---|---|---|",
    );
    for (const f of r.files) {
      lines.push(`| ${f.file} | ${f.tests} | ${f.caught} | ${f.counted} | ${percent(f.caught, f.counted)} |`);
    }
    lines.push("");
    for (const f of r.files) {
      if (f.survivors.length === 0) continue;
      lines.push(`### ${f.file}: survivors${f.tests === 0 ? " (no unit test loads it)" : ""}`, "");
      for (const m of f.survivors) {
        const replacement = (m.replacement ?? "").replaceAll(/\s+/g, " ").slice(0, 80);
        lines.push(
          `- ${m.location.start.line}:${m.location.start.column} ${m.mutatorName} → \`${replacement}\``,
        );
      }
      lines.push("");
    }
  }
  return lines.join("\n");
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { concurrency: { type: "string", default: "2" }, files: { type: "string" } },
});
const unknown = positionals.filter((room) => !(room in ROOMS));
if (unknown.length > 0) {
  process.stderr.write(`unknown room ${unknown.join(", ")}; rooms: ${Object.keys(ROOMS).join(", ")}\n`);
  process.exit(2);
}
mkdirSync(out, { recursive: true });
const scores: RoomScore[] = [];
for (const room of positionals.length > 0 ? positionals : Object.keys(ROOMS)) {
  scores.push(await runRoom(room, Number(values.concurrency), values.files));
  writeFileSync(resolve(out, "summary.md"), summary(scores));
}
process.stdout.write(summary(scores));
