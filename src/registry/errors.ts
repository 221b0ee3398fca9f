// Typed failures of the registry client. `status` is the HTTP status, or 0 when no response came
// back (refused, reset, timed out, cancelled); `code` is the registry's error code when the body
// carried one (e.g. MANIFEST_UNKNOWN, DIGEST_INVALID), else a client-side code.

export type TransportCode = "TIMEOUT" | "CANCELLED" | "UNREACHABLE";

export class RegistryError extends Error {
  readonly status: number;
  readonly code: string;
  readonly method: string;
  /** The request URL; never carries credentials (they travel in headers only). */
  readonly url: string;

  constructor(opts: {
    status: number;
    code: string;
    message: string;
    method: string;
    url: string;
    cause?: unknown;
  }) {
    super(
      `${opts.method} ${opts.url}: ${opts.status ? `${opts.status} ` : ""}${opts.code}: ${opts.message}`,
      {
        cause: opts.cause,
      },
    );
    this.name = "RegistryError";
    this.status = opts.status;
    this.code = opts.code;
    this.method = opts.method;
    this.url = opts.url;
  }
}

/** GET of a manifest that is not there (upstream's snapshot.ErrManifestNotFound). */
export class ManifestNotFoundError extends RegistryError {
  constructor(opts: { code: string; message: string; method: string; url: string }) {
    super({ status: 404, ...opts });
    this.name = "ManifestNotFoundError";
  }
}

/** The first entry of an OCI distribution error body: {"errors":[{"code","message"}]}. */
export function parseErrorBody(body: string): { code: string; message: string } | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    const first = (parsed as { errors?: unknown })?.errors;
    if (!Array.isArray(first) || first.length === 0) return undefined;
    const entry = first[0] as { code?: unknown; message?: unknown };
    return {
      code: typeof entry.code === "string" ? entry.code : "UNKNOWN",
      message: typeof entry.message === "string" ? entry.message : "",
    };
  } catch {
    return undefined;
  }
}
