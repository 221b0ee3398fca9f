// Exit codes and the errors that carry them: every failure the plugin reports ends in one of these,
// with a message written for the person at the terminal (never a stack trace).

import { CocoonError, CocoonOperationError, CocoonTimeoutError } from "../sdk/errors.ts";

export const EXIT_OK = 0;
/** The request could not be made or was refused: unknown object, bad input, API or registry error. */
export const EXIT_ERROR = 1;
/** The command line itself is wrong: unknown command or flag, missing argument, bad value. */
export const EXIT_USAGE = 2;
/** --wait saw the operator report failure (phase Failed); the message carries its reason. */
export const EXIT_FAILED = 3;
/** --wait ran out of time; the message carries the operator's latest warning. */
export const EXIT_TIMEOUT = 4;

export class PluginError extends Error {
  readonly exitCode: number;

  constructor(message: string, exitCode: number = EXIT_ERROR) {
    super(message);
    this.name = "PluginError";
    this.exitCode = exitCode;
  }
}

export class UsageError extends PluginError {
  constructor(message: string) {
    super(message, EXIT_USAGE);
    this.name = "UsageError";
  }
}

/** The SDK's errors as the plugin's: operator failure exits 3, timeout 4, the rest 1. */
export function pluginError(err: unknown): unknown {
  if (err instanceof CocoonOperationError) return new PluginError(err.message, EXIT_FAILED);
  if (err instanceof CocoonTimeoutError) return new PluginError(err.message, EXIT_TIMEOUT);
  if (err instanceof CocoonError) return new PluginError(err.message, EXIT_ERROR);
  return err;
}
