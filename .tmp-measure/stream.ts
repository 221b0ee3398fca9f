// Ad-hoc measurement (not committed): streamed vs mounted blob copy of a large blob on the real registry.
import { createHash } from "node:crypto";
import { createRegistryClient, type FetchLike } from "../src/registry/index.ts";
import { builtinFetch } from "../src/registry/transport.ts";
import { startRegistry } from "../test/env/registry.ts";

const MiB = 1024 * 1024;
const size = Number(process.argv[2] ?? 256) * MiB;
const reg = await startRegistry();
try {
  // Push the blob by streaming random-ish chunks (so this process never holds it either).
  const chunk = Buffer.alloc(MiB);
  for (let i = 0; i < MiB; i++) chunk[i] = (i * 2654435761) & 255;
  const hash = createHash("sha256");
  for (let done = 0; done < size; done += MiB) hash.update(chunk);
  const digest = `sha256:${hash.digest("hex")}`;
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent >= size) return c.close();
      sent += MiB;
      c.enqueue(chunk);
    },
  });
  const start = await fetch(`${reg.url}/v2/proj/src/blobs/uploads/`, { method: "POST" });
  const loc = new URL(start.headers.get("location") ?? "", reg.url);
  loc.searchParams.set("digest", digest);
  const put = await fetch(loc, { method: "PUT", body, duplex: "half" } as RequestInit);
  if (put.status !== 201) throw new Error(`push ${put.status}`);

  const noMount: FetchLike = (url, init) => {
    const t = new URL(url);
    t.searchParams.delete("mount");
    t.searchParams.delete("from");
    return builtinFetch(t.href, init);
  };
  for (const [label, fetchImpl] of [["mount", builtinFetch], ["stream", noMount]] as const) {
    const client = createRegistryClient(`${reg.host}/proj`, { fetch: fetchImpl, dockerConfigPath: "/nonexistent" });
    global.gc?.();
    const rss0 = process.memoryUsage().rss;
    let peak = rss0;
    let livePeak = 0;
    let n = 0;
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
      if (++n % 10 === 0) {
        global.gc?.();
        livePeak = Math.max(livePeak, process.memoryUsage().arrayBuffers);
      }
    }, 20);
    const t0 = performance.now();
    const how = await client.copyBlob("src", `dst-${label}`, { digest, size });
    const ms = performance.now() - t0;
    clearInterval(timer);
    console.log(
      `${label}: ${how} ${size / MiB} MiB in ${ms.toFixed(0)} ms, RSS peak +${((peak - rss0) / MiB).toFixed(1)} MiB, live ArrayBuffers after GC peak ${(livePeak / MiB).toFixed(1)} MiB`,
    );
  }
} finally {
  await reg.stop();
}
