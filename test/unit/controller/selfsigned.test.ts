// The in-memory self-signed certificate of the secure metrics server: Node's own X.509 parser reads
// it back with the hosts, validity and key it was made with, and TLS accepts it with its key.
import assert from "node:assert/strict";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { describe, it } from "node:test";
import { createSecureContext } from "node:tls";
import { selfSignedCertificate } from "../../../src/controller/selfsigned.ts";

describe("selfSignedCertificate", () => {
  it("names every host as a subjectAltName, the first as subject and issuer, and is signed by its own key", () => {
    const pem = selfSignedCertificate(
      ["localhost", "127.0.0.1", "::1", "fd00::a:1"],
      new Date("2026-01-02T03:04:05Z"),
    );
    const cert = new X509Certificate(pem.cert);
    assert.equal(cert.subject, "CN=localhost");
    assert.equal(cert.issuer, "CN=localhost");
    assert.equal(
      cert.subjectAltName,
      "DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:FD00:0:0:0:0:0:A:1",
    );
    assert.ok(cert.verify(cert.publicKey));
    assert.ok(cert.checkPrivateKey(createPrivateKey(pem.key)));
    assert.equal(cert.validFromDate.toISOString(), "2026-01-02T03:04:05.000Z");
    assert.equal(cert.validToDate.toISOString(), "2027-01-02T03:04:05.000Z");
    assert.doesNotThrow(() => createSecureContext({ cert: pem.cert, key: pem.key }));
  });

  it("a validity reaching 2050 or later is written as GeneralizedTime and read back exactly", () => {
    const cert = new X509Certificate(
      selfSignedCertificate(["example.test"], new Date("2049-06-01T00:00:00Z"), 400).cert,
    );
    assert.equal(cert.validFromDate.toISOString(), "2049-06-01T00:00:00.000Z");
    assert.equal(cert.validToDate.toISOString(), "2050-07-06T00:00:00.000Z");
    assert.equal(cert.subjectAltName, "DNS:example.test");
  });

  it("two certificates never share a serial number or a key", () => {
    const now = new Date("2026-01-01T00:00:00Z");
    const [a, b] = [selfSignedCertificate(["localhost"], now), selfSignedCertificate(["localhost"], now)];
    assert.notEqual(new X509Certificate(a.cert).serialNumber, new X509Certificate(b.cert).serialNumber);
    assert.notEqual(a.key, b.key);
  });
});
