// Trust roots as Go's crypto/x509 finds them on Linux: SSL_CERT_FILE replaces the bundle list (the
// first readable file is used), SSL_CERT_DIR the directory list; both add up; non-certificates are
// skipped; nothing found at all falls back to Node's bundled roots.
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { rootCertificates } from "node:tls";
import { systemRootCertificates } from "../../../src/net/roots.ts";
import { createTestCA, type TestCA } from "../../support/proxyenv.ts";

describe("systemRootCertificates", () => {
  let dir: string;
  let first: TestCA;
  let second: TestCA;
  const pem = (ca: TestCA) => readFileSync(ca.caFile, "utf8").trim();

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "cocoon-roots-"));
    first = createTestCA("127.0.0.1");
    second = createTestCA("127.0.0.2");
  });

  after(() => {
    first.remove();
    second.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  it("SSL_CERT_FILE alone: exactly its certificates, other PEM blocks and text skipped", () => {
    const bundle = join(dir, "bundle.pem");
    writeFileSync(bundle, `# comment\n${pem(first)}\n${first.server.key}\n${pem(second)}\n`);
    const roots = systemRootCertificates({ SSL_CERT_FILE: bundle, SSL_CERT_DIR: join(dir, "none") });
    assert.deepEqual(roots, [pem(first), pem(second)]);
  });

  it("SSL_CERT_DIR: every certificate in every listed directory, added to the file's", () => {
    const a = join(dir, "a");
    const b = join(dir, "b");
    mkdirSync(a);
    mkdirSync(b);
    copyFileSync(second.caFile, join(a, "second.crt"));
    copyFileSync(second.caFile, join(b, "5d8a1f2c.0"));
    writeFileSync(join(b, "README"), "not a certificate");
    mkdirSync(join(b, "subdir"));
    const roots = systemRootCertificates({
      SSL_CERT_FILE: first.caFile,
      SSL_CERT_DIR: `${a}:${join(dir, "missing")}:${b}`,
    });
    assert.deepEqual(roots, [pem(first), pem(second)]);
  });

  it("nothing readable at all: Node's bundled roots", () => {
    const roots = systemRootCertificates({
      SSL_CERT_FILE: join(dir, "missing.pem"),
      SSL_CERT_DIR: join(dir, "missing"),
    });
    assert.deepEqual(roots, [...rootCertificates]);
  });
});
