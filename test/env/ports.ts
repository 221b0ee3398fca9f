import { createServer, type Server } from "node:net";

/**
 * Asks the kernel for `count` distinct free TCP ports on 127.0.0.1: every probe listener stays open
 * until all are bound, so two of them can never get the same port. The ports are released before
 * they are returned, so another process may still take one in between; daemons started on them go
 * through retryOnPortClash for that.
 */
async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      server.unref();
      servers.push(server);
      ports.push(await listenOnAnyPort(server));
    }
    return ports;
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

/** One free port on 127.0.0.1; see freePorts. */
export async function freePort(): Promise<number> {
  const [port = 0] = await freePorts(1);
  return port;
}

/** Two distinct free ports on 127.0.0.1; see freePorts. */
export async function freePortPair(): Promise<[number, number]> {
  const [first = 0, second = 0] = await freePorts(2);
  return [first, second];
}

function listenOnAnyPort(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (address && typeof address === "object") resolve(address.port);
      else reject(new Error("could not read the port of a probe listener"));
    });
  });
}

/**
 * Runs `start` (which picks its ports afresh each call) again when it failed because a port was
 * taken between freePorts() and the daemon's bind, up to `attempts` times in all.
 */
export async function retryOnPortClash<T>(start: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      const clash = err instanceof Error && err.message.includes("address already in use");
      if (!clash || attempt >= attempts) throw err;
    }
  }
}
