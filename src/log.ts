// One JSON logger for the whole operator; the level comes from OPERATOR_LOG_LEVEL (default info).
import { pino } from "pino";

export type Logger = pino.Logger;

const LEVELS = new Set(["debug", "info", "warn", "error"]);

export function levelFromEnv(value: string | undefined): string {
  const level = (value ?? "").trim().toLowerCase();
  return LEVELS.has(level) ? level : "info";
}

export const log: Logger = pino({
  level: levelFromEnv(process.env.OPERATOR_LOG_LEVEL),
  base: { component: "cocoon-operator" },
  timestamp: pino.stdTimeFunctions.isoTime,
});
