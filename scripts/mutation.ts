// `make mutation` (not part of `make test`): StrykerJS mutation testing of the rooms that hold safety
// rules. Each room's sources are mutated, and each mutant is run against the room's unit tests through
// Stryker's command runner (the tests are Node's own runner, which Stryker has no plugin for, so every
// mutant runs the whole command). Writes reports/mutation/ROOM.json (Stryker's mutation-testing
// report) and reports/mutation/summary.md: the score per room and every mutant that survived, by
// file and line, for a test to kill.
// Usage: npm run mutation -- [ROOM ...] [--concurrency N] [--files GLOB]   (rooms: see ROOMS; default
// all; --files mutates only those of the room's sources, to check the tests written for its survivors)

import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Stryker } from "@stryker-mutator/core";

type MutantResult = Awaited<ReturnType<Stryker["runMutationTest"]>>[number];

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const out = resolve(root, "reports/mutation");

interface Room {
  /** The sources mutated. */
  mutate: string[];
  /** The unit test files that pin the room's rules (globs as Node's test runner takes them). */
  tests: string[];
}

export const ROOMS: Record<string, Room> = {
  pass: {
    mutate: ["src/pass/**/*.ts"],
    tests: [
      "test/unit/pass/**/*.test.ts",
      "test/unit/cocoonset/lagging.test.ts",
      "test/unit/cocoonset/unsuspend.test.ts",
      "test/unit/cocoonset/suspend.test.ts",
      "test/unit/cocoonset/teardown.test.ts",
    ],
  },
  "cocoonset/decide": {
    mutate: ["src/cocoonset/decide/**/*.ts"],
    tests: ["test/unit/cocoonset/decide/**/*.test.ts"],
  },
  checkpoint: { mutate: ["src/checkpoint/**/*.ts"], tests: ["test/unit/checkpoint/**/*.test.ts"] },
  restore: { mutate: ["src/restore/**/*.ts"], tests: ["test/unit/restore/**/*.test.ts"] },
  pool: { mutate: ["src/pool/**/*.ts"], tests: ["test/unit/pool/**/*.test.ts"] },
};

/** Killed (a test failed) or timed out (a test hung): the mutant was caught. */
const CAUGHT = new Set(["Killed", "Timeout"]);
/** Mutants that count: caught, survived, or never run by any test. */
const COUNTED = new Set([...CAUGHT, "Survived", "NoCoverage"]);

interface RoomScore {
  room: string;
  caught: number;
  counted: number;
  survivors: MutantResult[];
  seconds: number;
}

async function runRoom(name: string, room: Room, concurrency: number, files?: string): Promise<RoomScore> {
  const started = Date.now();
  const quoted = room.tests.map((glob) => `'${glob}'`).join(" ");
  const results = await new Stryker({
    testRunner: "command",
    commandRunner: { command: `npx node --test --test-concurrency=1 ${quoted}` },
    mutate: files ? [files] : room.mutate,
    coverageAnalysis: "off",
    concurrency,
    reporters: ["progress", "json"],
    jsonReporter: { fileName: relative(root, resolve(out, `${name.replaceAll("/", "-")}.json`)) },
    tempDirName: ".stryker-tmp",
    // The tests run the .ts sources as they are; there is no tsconfig for Stryker to rewrite (and
    // TypeScript 7 has no JavaScript API to rewrite it with).
    tsconfigFile: "stryker-has-no-tsconfig.json",
    ignorePatterns: [".sandbox", ".testenv", "dist", "reports", "bench", "docs"],
    cleanTempDir: "always",
  }).runMutationTest();
  const counted = results.filter((r) => COUNTED.has(r.status));
  return {
    room: name,
    caught: counted.filter((r) => CAUGHT.has(r.status)).length,
    counted: counted.length,
    survivors: counted.filter((r) => !CAUGHT.has(r.status)),
    seconds: Math.round((Date.now() - started) / 1000),
  };
}

function summary(scores: RoomScore[]): string {
  const lines = [
    "# Mutation scores",
    "",
    "| room | caught | mutants | score | time |",
    "|---|---|---|---|---|",
    ...scores.map(
      (s) =>
        `| ${s.room} | ${s.caught} | ${s.counted} | ${s.counted === 0 ? "-" : ((100 * s.caught) / s.counted).toFixed(1)} % | ${s.seconds} s |`,
    ),
    "",
  ];
  for (const s of scores) {
    if (s.survivors.length === 0) continue;
    lines.push(`## ${s.room}: survivors`, "");
    for (const m of s.survivors) {
      const at = `${relative(root, m.fileName)}:${m.location.start.line}`;
      lines.push(
        `- ${at} ${m.mutatorName} → \`${(m.replacement ?? "").replaceAll("\n", " ").slice(0, 80)}\``,
      );
    }
    lines.push("");
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
for (const name of positionals.length > 0 ? positionals : Object.keys(ROOMS)) {
  const room = ROOMS[name];
  if (!room) continue;
  scores.push(await runRoom(name, room, Number(values.concurrency), values.files));
  writeFileSync(resolve(out, "summary.md"), summary(scores));
}
process.stdout.write(summary(scores));
