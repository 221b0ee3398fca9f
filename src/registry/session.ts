// One authenticated HTTP session with one registry: picks the scheme with a /v2/ ping, remembers
// the ping's challenge, caches bearer tokens per scope until they expire, and retries a request
// once after a 401 with a fresh token (adding the scope the 401 asked for).
import { type Challenge, parseChallenge } from "./challenge.ts";
import type { Credential, Keychain } from "./credentials.ts";
import { parseErrorBody, RegistryError } from "./errors.ts";
import type { RegistryBase } from "./reference.ts";
import { isInsecureHost } from "./reference.ts";
import { type FetchLike, type FetchResponse, isStreamBody } from "./transport.ts";

export type Action = "pull" | "push,pull";

export interface HttpResult {
  status: number;
  headers: FetchResponse["headers"];
  body: Buffer;
}

/** A response whose body has not been read: the caller consumes or cancels `stream`. */
export interface StreamResult {
  status: number;
  headers: FetchResponse["headers"];
  stream: ReadableStream<Uint8Array> | null;
}

export interface RequestExtras {
  /** Request body; a stream is sent once, so a 401 to it is returned, not retried. */
  body?: string | Buffer | ReadableStream<Uint8Array>;
  /** Scopes the token needs beyond `repoPath`/`action`, e.g. pull on a blob mount's source. */
  scopes?: string[];
}

export interface SessionOptions {
  base: RegistryBase;
  keychain: Keychain;
  fetch: FetchLike;
  onRequest?: (method: string, path: string, status: number) => void;
}

/** A call's combined signal and what ended it, to tell a timeout from a cancellation. */
export interface CallSignal {
  signal: AbortSignal;
  caller?: AbortSignal;
  timeout: AbortSignal;
}

interface CachedToken {
  token: string;
  expiresAt: number;
}

/** Registries default a token without expires_in to 60 s (distribution token spec). */
const DEFAULT_TOKEN_SECONDS = 60;
/** Refresh a little early so a token does not expire in flight. */
const TOKEN_EXPIRY_MARGIN_MS = 5_000;

export class Session {
  readonly #opts: SessionOptions;
  #ping: Promise<{ origin: string }> | undefined;
  /** How the registry wants to be authenticated: from the ping, updated by any later 401. */
  #challenge: Challenge | undefined;
  readonly #learnedScopes = new Map<string, string[]>();
  readonly #tokens = new Map<string, Promise<CachedToken>>();

  constructor(opts: SessionOptions) {
    this.#opts = opts;
  }

  /** Sends `method path` with auth for `repoPath`/`action`; the body is read in full. */
  async request(
    method: string,
    path: string,
    repoPath: string,
    action: Action,
    headers: Record<string, string>,
    call: CallSignal,
    extras: RequestExtras = {},
  ): Promise<HttpResult> {
    const result = await this.#exchange(method, path, repoPath, action, headers, call, extras, true);
    return result as HttpResult;
  }

  /** As request, but the response body is handed over unread (a blob streamed to another repository). */
  async open(
    method: string,
    path: string,
    repoPath: string,
    action: Action,
    headers: Record<string, string>,
    call: CallSignal,
  ): Promise<StreamResult> {
    return (await this.#exchange(method, path, repoPath, action, headers, call, {}, false)) as StreamResult;
  }

  async #exchange(
    method: string,
    path: string,
    repoPath: string,
    action: Action,
    headers: Record<string, string>,
    call: CallSignal,
    extras: RequestExtras,
    read: boolean,
  ): Promise<HttpResult | StreamResult> {
    const { origin } = await this.#pinged(call);
    const baseScope = `repository:${repoPath}:${action}`;
    const scopes = [baseScope, ...(extras.scopes ?? []), ...(this.#learnedScopes.get(baseScope) ?? [])];
    const url = `${origin}${path}`;
    let auth = await this.#authorizationOrForget(this.#challenge, scopes, false, call);
    const result = await this.#send(method, url, { ...headers, ...auth }, call, extras.body, read);
    if (result.status !== 401) return result;
    const challenge = parseChallenge(result.headers.get("www-authenticate"));
    // A streamed request body has been consumed: it cannot be sent again.
    if (!challenge || isStreamBody(extras.body)) return result;
    await discard(result);
    this.#challenge = challenge;
    // The registry names the scope it wants (distribution asks `delete` for DELETE): remember it
    // so later calls request it up front and hit the token cache.
    const wanted = challenge.params.scope;
    if (wanted && !scopes.includes(wanted)) {
      scopes.push(wanted);
      this.#learnedScopes.set(baseScope, [...(this.#learnedScopes.get(baseScope) ?? []), wanted]);
    }
    auth = await this.#authorizationOrForget(challenge, scopes, true, call);
    if (Object.keys(auth).length === 0) return result;
    return this.#send(method, url, { ...headers, ...auth }, call, extras.body, read);
  }

  async #pinged(call: CallSignal): Promise<{ origin: string }> {
    for (;;) {
      const shared = this.#ping;
      const ping = shared ?? this.#doPing(call);
      if (!shared) {
        this.#ping = ping;
        // A failed ping (registry down) is retried by the next call.
        ping.catch(() => {
          if (this.#ping === ping) this.#ping = undefined;
        });
      }
      try {
        return await ping;
      } catch (err) {
        // Another call's ping may have died of that call's own cancellation: ping again with ours.
        if (!shared || call.signal.aborted) throw err;
      }
    }
  }

  async #doPing(call: CallSignal): Promise<{ origin: string }> {
    const { base } = this.#opts;
    const schemes = base.insecure ? ["https", "http"] : ["https"];
    let lastError: unknown;
    for (const scheme of schemes) {
      const origin = `${scheme}://${base.host}`;
      try {
        const result = await this.#send("GET", `${origin}/v2/`, {}, call);
        this.#challenge =
          result.status === 401 ? parseChallenge(result.headers.get("www-authenticate")) : undefined;
        return { origin };
      } catch (err) {
        lastError = err;
        // Plain http is only worth a try when https failed to connect, not when the call ended.
        if (call.signal.aborted) break;
      }
    }
    throw lastError;
  }

  /**
   * #authorization, forgetting the challenge when no token can be had for it: otherwise a single 401
   * whose realm is unreachable would keep every later call away from the registry for good, even
   * once the registry serves anonymously again. The next call then asks the registry afresh.
   */
  async #authorizationOrForget(
    challenge: Challenge | undefined,
    scopes: string[],
    fresh: boolean,
    call: CallSignal,
  ): Promise<Record<string, string>> {
    try {
      return await this.#authorization(challenge, scopes, fresh, call);
    } catch (err) {
      if (this.#challenge === challenge) this.#challenge = undefined;
      throw err;
    }
  }

  async #authorization(
    challenge: Challenge | undefined,
    scopes: string[],
    fresh: boolean,
    call: CallSignal,
  ): Promise<Record<string, string>> {
    if (!challenge) return {};
    if (challenge.scheme === "basic") {
      const credential = await this.#opts.keychain.resolve(this.#opts.base.host);
      return credential.kind === "basic" ? { authorization: basicHeader(credential) } : {};
    }
    const token = await this.#token(challenge, scopes, fresh, call);
    return { authorization: `Bearer ${token}` };
  }

  async #token(challenge: Challenge, scopes: string[], fresh: boolean, call: CallSignal): Promise<string> {
    const realm = challenge.params.realm ?? "";
    const service = challenge.params.service ?? "";
    const key = `${realm}|${service}|${scopes.join(" ")}`;
    const cached = this.#tokens.get(key);
    if (cached && !fresh) {
      const token = await cached.catch(() => undefined);
      if (token && token.expiresAt > Date.now()) return token.token;
    }
    const pending = this.#fetchToken(realm, service, scopes, call);
    this.#tokens.set(key, pending);
    pending.catch(() => {
      if (this.#tokens.get(key) === pending) this.#tokens.delete(key);
    });
    return (await pending).token;
  }

  async #fetchToken(
    realm: string,
    service: string,
    scopes: string[],
    call: CallSignal,
  ): Promise<CachedToken> {
    let realmUrl: URL;
    try {
      realmUrl = new URL(realm);
    } catch {
      throw new RegistryError({
        status: 0,
        code: "TOKEN_REALM_INVALID",
        message: `bearer challenge has an unusable realm ${JSON.stringify(realm)}`,
        method: "GET",
        url: realm,
      });
    }
    // Credentials never travel in clear text to a host that is not local.
    if (realmUrl.protocol !== "https:" && !isInsecureHost(realmUrl.host)) {
      throw new RegistryError({
        status: 0,
        code: "TOKEN_REALM_INSECURE",
        message: "refusing a plain-http token realm on a non-local host",
        method: "GET",
        url: realmUrl.origin + realmUrl.pathname,
      });
    }
    const credential = await this.#opts.keychain.resolve(this.#opts.base.host);
    if (credential.kind === "registryToken") return { token: credential.token, expiresAt: Infinity };
    const startedAt = Date.now();
    let result: HttpResult;
    if (credential.kind === "identityToken") {
      const form = new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: credential.token,
        service,
        scope: scopes.join(" "),
        client_id: "cocoon-operator",
      });
      result = (await this.#send(
        "POST",
        realmUrl.href,
        { "content-type": "application/x-www-form-urlencoded" },
        call,
        form.toString(),
      )) as HttpResult;
    } else {
      if (service) realmUrl.searchParams.set("service", service);
      for (const scope of scopes) realmUrl.searchParams.append("scope", scope);
      const headers: Record<string, string> = {};
      if (credential.kind === "basic") headers.authorization = basicHeader(credential);
      result = (await this.#send("GET", realmUrl.href, headers, call)) as HttpResult;
    }
    if (result.status !== 200) {
      const parsed = parseErrorBody(result.body.toString("utf8"));
      throw new RegistryError({
        status: result.status,
        code: parsed?.code ?? "TOKEN_REQUEST_FAILED",
        message: parsed?.message || "token request refused",
        method: credential.kind === "identityToken" ? "POST" : "GET",
        url: realmUrl.origin + realmUrl.pathname,
      });
    }
    const body = JSON.parse(result.body.toString("utf8")) as {
      token?: string;
      access_token?: string;
      expires_in?: number;
    };
    const token = body.token || body.access_token;
    if (!token) {
      throw new RegistryError({
        status: result.status,
        code: "TOKEN_MISSING",
        message: "token response carries neither token nor access_token",
        method: "GET",
        url: realmUrl.origin + realmUrl.pathname,
      });
    }
    const seconds = body.expires_in && body.expires_in > 0 ? body.expires_in : DEFAULT_TOKEN_SECONDS;
    return { token, expiresAt: startedAt + seconds * 1000 - TOKEN_EXPIRY_MARGIN_MS };
  }

  async #send(
    method: string,
    url: string,
    headers: Record<string, string>,
    call: CallSignal,
    body?: RequestExtras["body"],
    read = true,
  ): Promise<HttpResult | StreamResult> {
    const path = new URL(url).pathname;
    let response: FetchResponse;
    let payload: Buffer | undefined;
    try {
      response = await this.#opts.fetch(url, { method, headers, body, signal: call.signal });
      if (read) payload = Buffer.from(await response.arrayBuffer());
    } catch (err) {
      this.#opts.onRequest?.(method, path, 0);
      throw transportError(err, method, url, call);
    }
    this.#opts.onRequest?.(method, path, response.status);
    if (payload === undefined)
      return { status: response.status, headers: response.headers, stream: response.body };
    return { status: response.status, headers: response.headers, body: payload };
  }
}

/** Releases an unread response body (a stream the caller will not consume). */
async function discard(result: HttpResult | StreamResult): Promise<void> {
  if ("stream" in result) await result.stream?.cancel().catch(() => undefined);
}

function basicHeader(credential: Extract<Credential, { kind: "basic" }>): string {
  return `Basic ${Buffer.from(`${credential.username}:${credential.password}`).toString("base64")}`;
}

function transportError(err: unknown, method: string, url: string, call: CallSignal): RegistryError {
  const plainUrl = url.split("?")[0] ?? url;
  if (call.caller?.aborted) {
    return new RegistryError({
      status: 0,
      code: "CANCELLED",
      message: "call cancelled",
      method,
      url: plainUrl,
    });
  }
  if (call.timeout.aborted) {
    return new RegistryError({
      status: 0,
      code: "TIMEOUT",
      message: "call timed out",
      method,
      url: plainUrl,
    });
  }
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const detail = cause?.code ?? cause?.message ?? (err as Error).message;
  return new RegistryError({
    status: 0,
    code: "UNREACHABLE",
    message: `no response: ${detail}`,
    method,
    url: plainUrl,
    cause: err,
  });
}
