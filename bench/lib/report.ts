// Statistics, machine facts, BENCHMARKS.md sections and the one-line machine-readable summary every
// benchmark prints. Each benchmark owns one section of BENCHMARKS.md (per operator label) and
// rewrites only that section, so the benchmarks can run in any order and one at a time.

import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join, resolve } from "node:path";

export const repoRoot = resolve(import.meta.dirname, "../..");
const BENCHMARKS_MD = join(repoRoot, "BENCHMARKS.md");

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Nearest-rank percentile (p in 0..100) of unsorted values; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1] ?? Number.NaN;
}

export interface Spread {
  median: number;
  min: number;
  max: number;
  runs: number;
}

export function spread(values: readonly number[]): Spread {
  return {
    median: median(values),
    min: Math.min(...values),
    max: Math.max(...values),
    runs: values.length,
  };
}

/** "12.3 (10.1–14.0)" with `digits` decimals. */
export function fmt(s: Spread, digits = 1): string {
  return `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
}

export interface Machine {
  nproc: number;
  memoryGiB: number;
  cpuModel: string;
  node: string;
  kernel: string;
}

export function machine(): Machine {
  let cpuModel = cpus()[0]?.model ?? "unknown";
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8")
      .split("\n")
      .find((l) => l.startsWith("model name"));
    if (line) cpuModel = line.split(":").slice(1).join(":").trim();
  } catch {}
  let kernel = "";
  try {
    kernel = execFileSync("uname", ["-r"], { encoding: "utf8" }).trim();
  } catch {}
  return {
    nproc: cpus().length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    cpuModel,
    node: process.version,
    kernel,
  };
}

/** Load average when the benchmark started: the machine may be shared, so every section records it. */
const startLoad = loadavg();

export function machineLine(m: Machine = machine()): string {
  const load = startLoad.map((v) => v.toFixed(2)).join(" ");
  return `${m.nproc} CPUs (${m.cpuModel}), ${m.memoryGiB} GiB RAM, Linux ${m.kernel}, Node ${m.node}; load average at start ${load}`;
}

/** The command that ran this benchmark, as a user would type it. */
export function commandLine(script: string, args: readonly string[] = process.argv.slice(2)): string {
  const quoted = args.map((a) => (/[\s"'$]/.test(a) ? `'${a.replaceAll("'", "'\\''")}'` : a));
  return [`npm run ${script}`, ...(quoted.length > 0 ? ["--", ...quoted] : [])].join(" ");
}

const HEADER = `# Benchmarks

Produced by \`bench/\` (\`make bench\` runs 1–5; \`npm run bench:<name>\` runs one, also \`relist\`, \`standby\` and \`pool\`). Every section
below is rewritten by its benchmark on each run; the machine line is the machine of that run.
Benchmarks 3–5 run the operator as a separate process (\`--operator-command\`), so any operator binary
that reads \`KUBECONFIG\` and \`OCI_REGISTRY\` can be measured on the same environment; the label
after the benchmark name says which operator was measured; with \`--compare-command\` (benchmarks 3, 4 and 5)
two operators take turns in one run. Figures are "median (min–max)".
`;

/** Replaces (or appends) the section `id` of BENCHMARKS.md with `body` (markdown, no trailing marker). */
export function writeSection(id: string, title: string, body: string): void {
  const start = `<!-- bench:${id}:start -->`;
  const end = `<!-- bench:${id}:end -->`;
  const block = `${start}\n## ${title}\n\n${body.trim()}\n${end}`;
  let text = existsSync(BENCHMARKS_MD) ? readFileSync(BENCHMARKS_MD, "utf8") : HEADER;
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from >= 0 && to > from) {
    text = text.slice(0, from) + block + text.slice(to + end.length);
  } else {
    // Sections sorted by id, so the file reads 1..5 whatever order the benchmarks ran in.
    const sections = [...text.matchAll(/<!-- bench:([^:]+:[^:]+):start -->/g)].map((m) => ({
      id: m[1] ?? "",
      at: m.index ?? 0,
    }));
    const next = sections.find((s) => s.id > id);
    text = next
      ? `${text.slice(0, next.at)}${block}\n\n${text.slice(next.at)}`
      : `${text.trimEnd()}\n\n${block}\n`;
  }
  writeFileSync(BENCHMARKS_MD, text.endsWith("\n") ? text : `${text}\n`);
}

/** The machine-readable summary: one line, `BENCH <json>`, on stdout. */
export function printSummary(summary: Record<string, unknown>): void {
  process.stdout.write(`BENCH ${JSON.stringify(summary)}\n`);
}

export function progress(message: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** Table rows in markdown. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}
