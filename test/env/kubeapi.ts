import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request } from "node:https";

/** What a raw API call needs: the apiserver URL, a bearer token and the CA bundle to trust. */
export interface ApiConnection {
  server: string;
  token: string;
  caFile: string;
}

export interface ApiResponse {
  status: number;
  /** Parsed JSON when the response is JSON, otherwise the text. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary API objects
  body: any;
}

/**
 * One HTTPS request to the apiserver. Built on node:https because the built-in fetch cannot take a
 * CA per request. Objects are sent as JSON; `contentType` selects merge/strategic/apply patches.
 */
export function apiRequest(
  conn: ApiConnection,
  method: string,
  path: string,
  body?: unknown,
  contentType = "application/json",
): Promise<ApiResponse> {
  const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  const headers: Record<string, string> = {
    authorization: `Bearer ${conn.token}`,
    accept: "application/json",
  };
  if (payload !== undefined) {
    headers["content-type"] = contentType;
    headers["content-length"] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, conn.server),
      { method, headers, ca: readFileSync(conn.caFile) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const isJson = (res.headers["content-type"] ?? "").includes("json");
          resolve({ status: res.statusCode ?? 0, body: isJson && text !== "" ? JSON.parse(text) : text });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

/** GET an http(s) `url`, skipping TLS verification (the CA may not exist yet); true on 200. */
export function probeHealthy(url: string): Promise<boolean> {
  const send = url.startsWith("https:") ? request : httpRequest;
  return new Promise((resolve) => {
    const req = send(url, { rejectUnauthorized: false, timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(false));
    req.end();
  });
}
