import { startRegistry } from "../test/env/registry.ts";
import { createHash } from "node:crypto";
const MiB = 1024 * 1024;
const size = 512 * MiB;
const reg = await startRegistry();
const peakOf = async (label: string, fn: () => Promise<void>) => {
  global.gc?.();
  const rss0 = process.memoryUsage().rss;
  let peak = 0;
  let n = 0;
  const t = setInterval(() => {
    if (++n % 10 === 0) {
      global.gc?.();
      peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    }
  }, 20);
  const t0 = performance.now();
  await fn();
  clearInterval(t);
  console.log(`${label}: ${(performance.now() - t0).toFixed(0)} ms, live ArrayBuffers peak ${(peak / MiB).toFixed(1)} MiB`);
};
try {
  const chunk = Buffer.alloc(MiB, 7);
  const hash = createHash("sha256");
  for (let d = 0; d < size; d += MiB) hash.update(chunk);
  const digest = `sha256:${hash.digest("hex")}`;
  const gen = () => {
    let sent = 0;
    return new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= size) return c.close();
        sent += MiB;
        c.enqueue(Buffer.from(chunk));
      },
    });
  };
  const upload = async (repo: string, body: ReadableStream<Uint8Array>) => {
    const start = await fetch(`${reg.url}/v2/${repo}/blobs/uploads/`, { method: "POST" });
    await start.body?.cancel();
    const loc = new URL(start.headers.get("location") ?? "", reg.url);
    loc.searchParams.set("digest", digest);
    const put = await fetch(loc, { method: "PUT", body, duplex: "half" } as RequestInit);
    await put.body?.cancel();
    if (put.status !== 201) throw new Error(`push ${put.status}`);
  };
  await peakOf("PUT generated stream", () => upload("p/a", gen()));
  await peakOf("GET consumed slowly", async () => {
    const res = await fetch(`${reg.url}/v2/p/a/blobs/${digest}`);
    const reader = res.body!.getReader();
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
      await new Promise((r) => setImmediate(r));
    }
  });
  await peakOf("GET piped into PUT", async () => {
    const res = await fetch(`${reg.url}/v2/p/a/blobs/${digest}`);
    await upload("p/b", res.body!);
  });
} finally {
  await reg.stop();
}
