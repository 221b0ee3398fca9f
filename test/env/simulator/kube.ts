// A minimal Kubernetes API client for the simulator: bearer token, a CA file and one keep-alive
// agent (Node's fetch cannot take a per-request CA, so this uses node:https directly).

import { readFileSync } from "node:fs";
import { Agent, request } from "node:https";

export interface KubeResponse<T = unknown> {
  status: number;
  body: T;
}

export interface RequestOptions {
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

export const MERGE_PATCH = "application/merge-patch+json";
export const STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json";

export class KubeClient {
  private readonly url: URL;
  private readonly token: string;
  private readonly agent: Agent;

  constructor(server: string, token: string, caFile: string) {
    this.url = new URL(server);
    this.token = token;
    this.agent = new Agent({ keepAlive: true, ca: readFileSync(caFile) });
  }

  /** One request; any status is returned (callers decide what is an error). Body is parsed JSON or null. */
  async request<T = unknown>(
    method: string,
    path: string,
    opts: RequestOptions = {},
  ): Promise<KubeResponse<T>> {
    const res = await this.open(method, path, opts);
    const chunks: Buffer[] = [];
    for await (const chunk of res.stream) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown = null;
    if (text.length > 0) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    return { status: res.status, body: body as T };
  }

  /** Streams a watch response, calling onEvent per JSON line, until the server closes it or signal aborts. */
  async watch(path: string, signal: AbortSignal, onEvent: (event: WatchEvent) => void): Promise<number> {
    const res = await this.open("GET", path, { signal });
    if (res.status !== 200) {
      for await (const _ of res.stream) {
        // drain the error body so the socket returns to the agent
      }
      return res.status;
    }
    let pending = "";
    try {
      for await (const chunk of res.stream) {
        pending += (chunk as Buffer).toString("utf8");
        let newline = pending.indexOf("\n");
        while (newline >= 0) {
          const line = pending.slice(0, newline).trim();
          pending = pending.slice(newline + 1);
          if (line.length > 0) onEvent(JSON.parse(line) as WatchEvent);
          newline = pending.indexOf("\n");
        }
      }
    } catch (err) {
      if (!signal.aborted) throw err;
    }
    return 200;
  }

  close(): void {
    this.agent.destroy();
  }

  private open(
    method: string,
    path: string,
    opts: RequestOptions,
  ): Promise<{ status: number; stream: NodeJS.ReadableStream }> {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.token}`,
      accept: "application/json",
    };
    if (payload !== undefined) {
      headers["content-type"] = opts.contentType ?? "application/json";
      headers["content-length"] = String(Buffer.byteLength(payload));
    }
    return new Promise((resolve, reject) => {
      const req = request(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname,
          port: this.url.port,
          path,
          method,
          headers,
          agent: this.agent,
          signal: opts.signal,
        },
        (res) => resolve({ status: res.statusCode ?? 0, stream: res }),
      );
      req.on("error", reject);
      req.end(payload);
    });
  }
}

export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: { metadata?: { resourceVersion?: string }; code?: number } & Record<string, unknown>;
}

/** Thrown for an unexpected API status; `status` lets callers treat 404/409 specially. */
export class KubeError extends Error {
  readonly status: number;

  constructor(what: string, res: KubeResponse) {
    const detail =
      typeof res.body === "object" && res.body !== null && "message" in res.body
        ? String((res.body as { message: unknown }).message)
        : JSON.stringify(res.body);
    super(`${what}: HTTP ${res.status}: ${detail}`);
    this.status = res.status;
  }
}

export function ok(res: KubeResponse): boolean {
  return res.status >= 200 && res.status < 300;
}
