// The real registry behind a registry client that answers 403 DENIED ("refused by the test") to the
// manifest PUTs and DELETEs a test names, as a registry with a policy or a quota would, and holds the
// manifest PUTs a test stalls until it lets them go, as a slow copy would. Every write the client
// sends (refused or not) is listed, so a test can say that none was made.
import { createRegistryClient, type FetchLike, type RegistryClient } from "../../src/registry/index.ts";
import { createTransport } from "../../src/registry/transport.ts";

export interface RefusingRegistry {
  registry: RegistryClient;
  /** Path suffixes (`/<vm>/manifests/<tag>`) whose manifest PUT is refused. */
  puts: Set<string>;
  /** Repositories (VM names) in which every manifest DELETE is refused. */
  deletes: Set<string>;
  /** `<METHOD> <path>` of every request other than GET and HEAD, in order. */
  writes: string[];
  /** Holds every manifest PUT whose path ends with `suffix` until the returned function is called. */
  stall(suffix: string): () => void;
}

export function refusingRegistry(base: string): RefusingRegistry {
  const puts = new Set<string>();
  const deletes = new Set<string>();
  const writes: string[] = [];
  const stalls = new Map<string, Promise<void>>();
  const transport = createTransport();
  const fetch: FetchLike = async (url, init) => {
    const path = new URL(url).pathname;
    if (init.method !== "GET" && init.method !== "HEAD") writes.push(`${init.method} ${path}`);
    if (init.method === "PUT" && path.includes("/manifests/")) {
      for (const [suffix, gate] of stalls) if (path.endsWith(suffix)) await gate;
    }
    const refusedPut = init.method === "PUT" && [...puts].some((suffix) => path.endsWith(suffix));
    const refusedDelete =
      init.method === "DELETE" && [...deletes].some((vm) => path.includes(`/${vm}/manifests/`));
    if (!refusedPut && !refusedDelete) return transport(url, init);
    if (init.body instanceof ReadableStream) await init.body.cancel();
    return new Response(JSON.stringify({ errors: [{ code: "DENIED", message: "refused by the test" }] }), {
      status: 403,
      headers: { "content-type": "application/json" },
    });
  };
  const stall = (suffix: string): (() => void) => {
    let release = (): void => undefined;
    stalls.set(
      suffix,
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    return () => {
      stalls.delete(suffix);
      release();
    };
  };
  return { registry: createRegistryClient(base, { fetch }), puts, deletes, writes, stall };
}
