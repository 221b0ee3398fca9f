import { createServer } from "node:net";

/**
 * Asks the kernel for a free TCP port on 127.0.0.1. The port is released before it is returned, so
 * another process could take it in between; on a test machine that race is rare enough to accept.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === "object") resolve(address.port);
        else reject(new Error("could not read the port of a probe listener"));
      });
    });
  });
}
