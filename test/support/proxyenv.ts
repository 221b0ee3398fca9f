// What the proxy tests run against: a real forward proxy (Debian's tinyproxy) listening on loopback
// and serving loopback clients only, TCP and TLS forwarders that make a loopback service reachable
// at this machine's own non-loopback address (Go never proxies loopback targets, so a proxied
// request needs such an address), and a throwaway CA for the TLS one.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net, { type AddressInfo } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { selfSignedCertificate } from "../env/certs.ts";
import { freePort } from "../env/ports.ts";
import { waitFor } from "../env/testenv.ts";

export interface Tinyproxy {
  /** http://127.0.0.1:PORT */
  url: string;
  /** The request lines the proxy logged so far, e.g. "CONNECT 192.0.2.2:41234 HTTP/1.1". */
  requests(): string[];
  stop(): Promise<void>;
}

export async function startTinyproxy(): Promise<Tinyproxy> {
  const dir = mkdtempSync(join(tmpdir(), "cocoon-tinyproxy-"));
  const port = await freePort();
  const logFile = join(dir, "tinyproxy.log");
  writeFileSync(logFile, "");
  writeFileSync(
    join(dir, "tinyproxy.conf"),
    [
      `Port ${port}`,
      "Listen 127.0.0.1",
      "Allow 127.0.0.1",
      "Timeout 60",
      "MaxClients 32",
      "DisableViaHeader Yes",
      `LogFile "${logFile}"`,
      "LogLevel Connect",
      // No ConnectPort line: CONNECT may reach any port (the forwarders' are random).
      "",
    ].join("\n"),
  );
  const child: ChildProcess = spawn("tinyproxy", ["-d", "-c", join(dir, "tinyproxy.conf")], {
    stdio: "ignore",
  });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const missing = new Promise<never>((_, reject) =>
    child.once("error", (err) =>
      reject(
        new Error(
          `tinyproxy did not start (${err.message}): install the Debian package tinyproxy, as .ci/run does`,
        ),
      ),
    ),
  );
  const requests = () =>
    readFileSync(logFile, "utf8")
      .split("\n")
      .map((line) => /Request \(file descriptor \d+\): (.*)$/.exec(line)?.[1])
      .filter((line): line is string => line !== undefined);
  const listening = waitFor(
    "tinyproxy to listen",
    () =>
      new Promise<true | undefined>((resolve) => {
        const socket = net.connect(port, "127.0.0.1");
        socket.once("connect", () => {
          socket.destroy();
          resolve(true);
        });
        socket.once("error", () => resolve(undefined));
      }),
    10_000,
  );
  // Without the binary, `missing` settles the race and the polling's own timeout is moot.
  listening.catch(() => {});
  await Promise.race([listening, missing]);
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    async stop() {
      child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** This machine's first non-loopback IPv4 address; the proxy tests need one. */
export function externalIPv4(): string {
  for (const addresses of Object.values(networkInterfaces())) {
    const found = addresses?.find((a) => a.family === "IPv4" && !a.internal);
    if (found) return found.address;
  }
  throw new Error("no non-loopback IPv4 address on this machine: the proxy tests need one");
}

export interface Forwarder {
  /** host:port the forwarder listens on. */
  address: string;
  stop(): Promise<void>;
}

/** Listens on host (port 0) and pipes every connection to upstream; with tls, terminates TLS first. */
export async function startForwarder(
  host: string,
  upstream: { host: string; port: number },
  opts: { tls?: { cert: string; key: string } } = {},
): Promise<Forwarder> {
  const sockets = new Set<net.Socket>();
  const onClient = (client: net.Socket) => {
    const server = net.connect(upstream.port, upstream.host);
    for (const s of [client, server]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {
        client.destroy();
        server.destroy();
      });
    }
    client.pipe(server).pipe(client);
  };
  const server = opts.tls ? tls.createServer(opts.tls, onClient) : net.createServer(onClient);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `${host}:${port}`,
    async stop() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

export interface TestCA {
  dir: string;
  /** PEM file of the CA certificate. */
  caFile: string;
  /** A server certificate and key signed by the CA, for the IP address given. */
  server: { cert: string; key: string };
  remove(): void;
}

export function createTestCA(ip: string): TestCA {
  const dir = mkdtempSync(join(tmpdir(), "cocoon-testca-"));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { stdio: "ignore" });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  selfSignedCertificate(dir, "ca", { subject: "/CN=cocoon proxy test CA" });
  openssl(
    "req",
    "-new",
    ...ec,
    "-keyout",
    file("server.key"),
    "-out",
    file("server.csr"),
    "-subj",
    `/CN=${ip}`,
  );
  writeFileSync(file("san.ext"), `subjectAltName=IP:${ip}\n`);
  openssl(
    "x509",
    "-req",
    "-in",
    file("server.csr"),
    "-CA",
    file("ca.crt"),
    "-CAkey",
    file("ca.key"),
    "-CAcreateserial",
    "-out",
    file("server.crt"),
    "-days",
    "1",
    "-extfile",
    file("san.ext"),
  );
  return {
    dir,
    caFile: file("ca.crt"),
    server: { cert: readFileSync(file("server.crt"), "utf8"), key: readFileSync(file("server.key"), "utf8") },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
