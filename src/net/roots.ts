// The certificates TLS connections trust when no CA is configured: the system roots, found the way
// Go's crypto/x509 finds them on Linux (the first CA bundle file that exists, plus every file in the
// certificate directories), with SSL_CERT_FILE replacing the file list and SSL_CERT_DIR the
// directory list (colon-separated). An image without any CA bundle falls back to Node's bundled
// Mozilla roots, so public registries still verify.
import { X509Certificate } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { rootCertificates } from "node:tls";
import type { Env } from "./proxy.ts";

/** crypto/x509's root_linux.go lists, in its order. */
const CERT_FILES = [
  "/etc/ssl/certs/ca-certificates.crt",
  "/etc/pki/tls/certs/ca-bundle.crt",
  "/etc/ssl/ca-bundle.pem",
  "/etc/pki/tls/cacert.pem",
  "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
  "/etc/ssl/cert.pem",
];
const CERT_DIRECTORIES = ["/etc/ssl/certs", "/etc/pki/tls/certs"];

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function read(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** Whether a CERTIFICATE block parses, as AppendCertsFromPEM keeps only those that do. */
function parses(block: string): boolean {
  try {
    new X509Certificate(block);
    return true;
  } catch {
    return false;
  }
}

const cache = new Map<string, string[]>();

/** PEM certificates (deduplicated); read once per SSL_CERT_FILE / SSL_CERT_DIR pair. */
export function systemRootCertificates(env: Env = process.env): string[] {
  const key = `${env.SSL_CERT_FILE ?? ""}\n${env.SSL_CERT_DIR ?? ""}`;
  const cached = cache.get(key);
  if (cached) return cached;
  // Blocks are collected first and parsed once each: the directories repeat the bundle's certificates.
  const blocks = new Set<string>();
  const add = (text: string) => {
    for (const block of text.match(PEM_CERTIFICATE) ?? []) blocks.add(block);
  };
  const files = env.SSL_CERT_FILE ? [env.SSL_CERT_FILE] : CERT_FILES;
  for (const file of files) {
    const text = read(file);
    if (text === undefined) continue;
    add(text);
    break;
  }
  const dirs = env.SSL_CERT_DIR ? env.SSL_CERT_DIR.split(":") : CERT_DIRECTORIES;
  for (const dir of dirs) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      const text = read(join(dir, name));
      if (text !== undefined) add(text);
    }
  }
  const roots = [...blocks].filter(parses);
  const result = roots.length > 0 ? roots : [...rootCertificates];
  cache.set(key, result);
  return result;
}
