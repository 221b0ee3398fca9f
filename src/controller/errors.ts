// Typed API errors, built from the Status body the API server returns with every failure.

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: { type?: string; message?: string; field?: string }[];
  retryAfterSeconds?: number;
}

export class ApiError extends Error {
  /** HTTP status code (0 when the request never got a response). */
  readonly status: number;
  /** Status.reason, e.g. "NotFound", "Conflict", "Expired". */
  readonly reason: string;
  readonly details: StatusDetails | undefined;

  constructor(status: number, reason: string, message: string, details?: StatusDetails) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.reason = reason;
    this.details = details;
  }
}

export class NotFoundError extends ApiError {}
export class AlreadyExistsError extends ApiError {}
export class ConflictError extends ApiError {}
export class InvalidError extends ApiError {}
export class TooManyRequestsError extends ApiError {}
/** 410: the requested resourceVersion is too old (compacted); the caller must re-list. */
export class GoneError extends ApiError {}

interface StatusBody {
  kind?: string;
  reason?: string;
  message?: string;
  code?: number;
  details?: StatusDetails;
}

/** Builds the typed error for a failed response; body is the raw response text (a Status, usually). */
export function apiErrorFromResponse(status: number, body: string): ApiError {
  let parsed: StatusBody = {};
  try {
    const value: unknown = JSON.parse(body);
    if (value !== null && typeof value === "object") parsed = value as StatusBody;
  } catch {
    // Not JSON (a proxy's HTML page, say): keep the raw text as the message.
  }
  return apiErrorFromStatus(
    parsed.code ?? status,
    parsed.reason,
    parsed.message ?? body.slice(0, 500),
    parsed.details,
  );
}

/** Builds the typed error from a Status object (also used for ERROR events inside a watch stream). */
export function apiErrorFromStatus(
  code: number,
  reason: string | undefined,
  message: string,
  details?: StatusDetails,
): ApiError {
  const r = reason ?? "";
  if (code === 404 || r === "NotFound") return new NotFoundError(code, r || "NotFound", message, details);
  if (r === "AlreadyExists") return new AlreadyExistsError(code, r, message, details);
  if (code === 409 || r === "Conflict") return new ConflictError(code, r || "Conflict", message, details);
  if (code === 422 || r === "Invalid") return new InvalidError(code, r || "Invalid", message, details);
  if (code === 429 || r === "TooManyRequests") {
    return new TooManyRequestsError(code, r || "TooManyRequests", message, details);
  }
  if (code === 410 || r === "Expired" || r === "Gone")
    return new GoneError(code, r || "Gone", message, details);
  return new ApiError(code, r || "Unknown", message, details);
}

export const isNotFound = (e: unknown): e is NotFoundError => e instanceof NotFoundError;
export const isAlreadyExists = (e: unknown): e is AlreadyExistsError => e instanceof AlreadyExistsError;
export const isConflict = (e: unknown): e is ConflictError => e instanceof ConflictError;
export const isInvalid = (e: unknown): e is InvalidError => e instanceof InvalidError;
export const isTooManyRequests = (e: unknown): e is TooManyRequestsError => e instanceof TooManyRequestsError;
export const isGone = (e: unknown): e is GoneError => e instanceof GoneError;
/** 403: RBAC, an admission policy or webhook, or a ResourceQuota refused the request. */
export const isForbidden = (e: unknown): e is ApiError => e instanceof ApiError && e.status === 403;
/**
 * A write the API server refused as sent: forbidden (an admission policy or webhook, a quota, RBAC) or
 * invalid. The same write fails again until something else changes, so the caller says why and backs
 * off rather than retrying at once.
 */
export const isRefused = (e: unknown): e is ApiError => isForbidden(e) || isInvalid(e);

/** The read's result, or undefined when the object does not exist (404). */
export async function unlessNotFound<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
