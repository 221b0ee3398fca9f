// `npx node --expose-gc bench/blobcopy.ts [MiB] [chunk MiB]`: a branch's blob copy on the real test
// registry, for one blob of MiB (default 256), chunks of chunk MiB (default the operator's, 16):
//  - mount, chunked stream and monolithic stream (the registry's mount ignored), each with its time,
//    the RSS peak over the start, and the peak of live ArrayBuffers after forced GCs: a streamed copy
//    must not hold the blob;
//  - a chunked stream cut at 90 % of the blob and resumed, through a front that buffers request bodies
//    as nginx does (the registry never sees the cut chunk) and straight to the registry (distribution
//    drops the session of a chunk cut short, so the blob starts again): bytes sent again, as a share
//    of the blob, and the time, the backoff's 0.5 s included.

import { createHash } from "node:crypto";
import { createRegistryClient, DEFAULT_CHUNK_BYTES, type FetchLike, MiB } from "../src/registry/index.ts";
import { createTransport } from "../src/registry/transport.ts";
import { startRegistry } from "../test/env/registry.ts";
import { startRegistryProxy } from "../test/support/faultproxy.ts";

const transport = createTransport();

const size = Number(process.argv[2] ?? 256) * MiB;
const chunkSize = process.argv[3] === undefined ? DEFAULT_CHUNK_BYTES : Number(process.argv[3]) * MiB;
const reg = await startRegistry();
const proxy = await startRegistryProxy(reg.host);
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
  const cases = [
    { label: "mount", host: reg.host, fetchImpl: transport, chunk: chunkSize, memory: true },
    { label: "chunked", host: reg.host, fetchImpl: noMount, chunk: chunkSize, memory: true },
    { label: "monolithic", host: reg.host, fetchImpl: noMount, chunk: 0, memory: true },
    { label: "chunked-via-front", host: proxy.host, fetchImpl: noMount, chunk: chunkSize, buffer: true },
    {
      label: "cut-90%-via-front",
      host: proxy.host,
      fetchImpl: noMount,
      chunk: chunkSize,
      buffer: true,
      cut: true,
    },
    { label: "cut-90%-direct", host: proxy.host, fetchImpl: noMount, chunk: chunkSize, cut: true },
  ];
  for (const c of cases) {
    const client = createRegistryClient(`${c.host}/proj`, {
      fetch: c.fetchImpl,
      dockerConfigPath: "/nonexistent",
      chunkSize: c.chunk,
    });
    proxy.bufferBodies(c.buffer === true);
    if (c.cut) proxy.cutUploadAfter(Math.floor(size * 0.9));
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
    const copied = await client.copyBlob("src", `dst-${c.label.replace(/[^a-z0-9-]/g, "")}`, {
      digest,
      size,
    });
    const ms = performance.now() - t0;
    clearInterval(timer);
    const resent = copied.method === "streamed" ? copied.bytesSent - size : 0;
    const memory = c.memory
      ? `, RSS peak +${((rssPeak - rss0) / MiB).toFixed(1)} MiB, live ArrayBuffers peak ${(livePeak / MiB).toFixed(1)} MiB`
      : "";
    process.stdout.write(
      `${c.label}: ${copied.method} ${size / MiB} MiB in ${ms.toFixed(0)} ms, ` +
        `re-sent ${(resent / MiB).toFixed(1)} MiB (${((100 * resent) / size).toFixed(1)} %)${memory}\n`,
    );
  }
} finally {
  await proxy.stop();
  await reg.stop();
}
