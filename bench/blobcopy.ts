// `npx node --expose-gc bench/blobcopy.ts [MiB]`: a branch's blob copy on the real test registry, by
// cross-repository mount and by streamed copy (the registry's mount ignored), for one blob of MiB
// (default 256). Prints each copy's time, the RSS peak over the start, and the peak of live
// ArrayBuffers after forced GCs: a streamed copy must not hold the blob.

import { createHash } from "node:crypto";
import { createRegistryClient, type FetchLike } from "../src/registry/index.ts";
import { createTransport } from "../src/registry/transport.ts";

const transport = createTransport();

import { startRegistry } from "../test/env/registry.ts";

const MiB = 1024 * 1024;
const size = Number(process.argv[2] ?? 256) * MiB;
const reg = await startRegistry();
try {
  // The blob is pushed from one reused chunk, so the push itself holds nothing.
  const chunk = Buffer.alloc(MiB);
  for (let i = 0; i < MiB; i++) chunk[i] = (i * 2654435761) & 255;
  const hash = createHash("sha256");
  for (let done = 0; done < size; done += MiB) hash.update(chunk);
  const digest = `sha256:${hash.digest("hex")}`;
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= size) return controller.close();
      sent += MiB;
      controller.enqueue(chunk);
    },
  });
  const start = await fetch(`${reg.url}/v2/proj/src/blobs/uploads/`, { method: "POST" });
  await start.body?.cancel();
  const location = new URL(start.headers.get("location") ?? "", reg.url);
  location.searchParams.set("digest", digest);
  const put = await fetch(location, { method: "PUT", body, duplex: "half" } as RequestInit);
  if (put.status !== 201) throw new Error(`push: HTTP ${put.status}`);

  const noMount: FetchLike = (url, init) => {
    const target = new URL(url);
    target.searchParams.delete("mount");
    target.searchParams.delete("from");
    return transport(target.href, init);
  };
  for (const [label, fetchImpl] of [
    ["mount", transport],
    ["stream", noMount],
  ] as const) {
    const client = createRegistryClient(`${reg.host}/proj`, {
      fetch: fetchImpl,
      dockerConfigPath: "/nonexistent",
    });
    globalThis.gc?.();
    const rss0 = process.memoryUsage().rss;
    let rssPeak = rss0;
    let livePeak = 0;
    let ticks = 0;
    const timer = setInterval(() => {
      rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
      if (++ticks % 10 === 0) {
        globalThis.gc?.();
        livePeak = Math.max(livePeak, process.memoryUsage().arrayBuffers);
      }
    }, 20);
    const t0 = performance.now();
    const how = await client.copyBlob("src", `dst-${label}`, { digest, size });
    const ms = performance.now() - t0;
    clearInterval(timer);
    process.stdout.write(
      `${label}: ${how} ${size / MiB} MiB in ${ms.toFixed(0)} ms, RSS peak +${((rssPeak - rss0) / MiB).toFixed(1)} MiB, ` +
        `live ArrayBuffers peak ${(livePeak / MiB).toFixed(1)} MiB\n`,
    );
  }
} finally {
  await reg.stop();
}
