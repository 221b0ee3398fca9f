// The SDK's errors: one class per way an operation can end other than as asked, each with a `reason`
// a caller can switch on (the operator's condition or Warning event reason where it gave one), so
// `catch` tells an operator refusal from a timeout from a missing object without parsing messages.

export class CocoonError extends Error {
  /** A short machine-readable cause, e.g. "NoReadyMember", "Timeout", "NotFound". */
  readonly reason: string;

  constructor(reason: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.reason = reason;
  }
}

/** The operator reported failure: `reason` is its condition reason or Warning event reason. */
export class CocoonOperationError extends CocoonError {
  /** What was awaited, e.g. `cocoonset "demo" to suspend`. */
  readonly what: string;
  /** The operator's own words. */
  readonly detail: string;

  constructor(what: string, reason: string, detail: string) {
    super(reason, `${what} failed: ${reason}: ${detail}`);
    this.what = what;
    this.detail = detail;
  }
}

export interface Warning {
  reason: string;
  message: string;
}

/** The wait ran out of time; it carries the last progress seen and the operator's latest Warning. */
export class CocoonTimeoutError extends CocoonError {
  readonly what: string;
  readonly timeoutMs: number;
  readonly progress: string;
  readonly warning: Warning | undefined;

  constructor(what: string, timeoutMs: number, progress: string, warning: Warning | undefined) {
    const said = warning ? `; the operator reports ${warning.reason}: ${warning.message}` : "";
    super("Timeout", `timed out after ${formatDuration(timeoutMs)} waiting for ${what} (${progress})${said}`);
    this.what = what;
    this.timeoutMs = timeoutMs;
    this.progress = progress;
    this.warning = warning;
  }
}

/**
 * The set, pool, claim or checkpoint does not exist (reason NotFound), or the cluster does not serve
 * its kind at all (reason KindNotServed: the CRD is not applied).
 */
export class CocoonNotFoundError extends CocoonError {
  constructor(message: string, reason: "NotFound" | "KindNotServed" = "NotFound") {
    super(reason, message);
  }
}

/** 1h2m3s, 5m0s, 30s: how a wait's timeout is written, as Go's time.Duration prints it. */
export function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

/** What an aborted operation rejects with: the signal's reason, else an AbortError. */
export function abortReason(signal: AbortSignal | undefined): unknown {
  return signal?.reason ?? new DOMException("This operation was aborted", "AbortError");
}
