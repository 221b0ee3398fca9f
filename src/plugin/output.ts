// Output as kubectl prints it: tables with upper-case headers and three-space gutters, ages in
// kubectl's short form (HumanDuration), sizes in binary units; -o json and -o yaml print the
// structured result instead. Durations on the command line are Go's (30s, 5m, 1h30m).

export { humanSize } from "../sdk/checkpoints.ts";
export { formatDuration } from "../sdk/errors.ts";

import { stringify } from "yaml";
import type { ResourceType } from "../controller/resources.ts";
import type { Output } from "./command.ts";
import { type DryRun, dryRunSuffix } from "./dryrun.ts";
import { UsageError } from "./errors.ts";

export const OUTPUT_FORMATS = ["wide", "json", "yaml", "name"] as const;
export type OutputFormat = "table" | (typeof OUTPUT_FORMATS)[number];

export function parseOutputFormat(value: string | undefined): OutputFormat {
  if (value === undefined || value === "") return "table";
  if ((OUTPUT_FORMATS as readonly string[]).includes(value)) return value as OutputFormat;
  throw new UsageError(`unknown output format "${value}": want one of ${OUTPUT_FORMATS.join(", ")}`);
}

/** kubectl's name of an object, RESOURCE.GROUP/NAME (cocoonset.cocoonset.cocoonstack.io/demo), which kubectl takes back. */
export function objectName(rt: ResourceType, name: string): string {
  const singular = rt.kind.toLowerCase();
  return `${rt.group === "" ? singular : `${singular}.${rt.group}`}/${name}`;
}

/**
 * The line about a write, as kubectl prints it: `NAME ACTION` (with the dry run said), or the bare
 * name for -o name; nothing for -o json|yaml, which print the object instead.
 */
export function announce(
  ctx: Output & { output: OutputFormat; dryRun: DryRun },
  rt: ResourceType,
  name: string,
  action: string,
): void {
  if (ctx.output === "json" || ctx.output === "yaml") return;
  const ref = objectName(rt, name);
  ctx.out(ctx.output === "name" ? ref : `${ref} ${action}${dryRunSuffix(ctx.dryRun)}`);
}

/** Rows under upper-case headers, columns padded to their widest cell, the last one unpadded. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, col) => Math.max(h.length, ...rows.map((r) => (r[col] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, col) => (col === cells.length - 1 ? cell : cell.padEnd(widths[col] ?? 0)))
      .join("   ")
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...rows.map(line)].join("\n");
}

/** The structured result as JSON (two-space indent) or YAML. */
export function formatStructured(value: unknown, format: "json" | "yaml"): string {
  return format === "json" ? JSON.stringify(value, null, 2) : stringify(value).trimEnd();
}

/** apimachinery's duration.HumanDuration: 45s, 3m20s, 17m, 5h30m, 30h, 3d4h, 120d, 2y30d. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8)
    return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const years = Math.floor(hours / 24 / 365);
  if (years < 8) {
    const days = Math.floor(hours / 24) % 365;
    return days === 0 ? `${years}y` : `${years}y${days}d`;
  }
  return `${years}y`;
}

/** The age of an RFC 3339 time at `nowMs`; "<unknown>" when there is none. */
export function age(time: string | undefined, nowMs: number): string {
  const at = time ? Date.parse(time) : Number.NaN;
  return Number.isNaN(at) ? "<unknown>" : humanDuration(nowMs - at);
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's time.ParseDuration for ms, s, m and h ("1h30m", "90s", "0"). */
export function parseDuration(text: string): number {
  if (text === "0") return 0;
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h)/y;
  let total = 0;
  let at = 0;
  while (at < text.length) {
    part.lastIndex = at;
    const match = part.exec(text);
    if (!match) break;
    total += Number(match[1]) * (DURATION_UNITS[match[2] as string] ?? 0);
    at = part.lastIndex;
  }
  if (text === "" || at !== text.length) {
    throw new UsageError(`invalid duration "${text}": use a number with a unit, e.g. 90s, 5m, 1h30m`);
  }
  return total;
}
