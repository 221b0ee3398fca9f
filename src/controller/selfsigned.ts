// A self-signed serving certificate made in memory, for the HTTPS metrics server when no certificate
// is given (controller-runtime's secure metrics server does the same). Node can parse X.509 but not
// write it, so the certificate is assembled here in DER: an EC P-256 key, an ECDSA-SHA256 signature,
// subject and issuer CN=<first host>, and every host as a subjectAltName (IP addresses as iPAddress).
import { generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { isIP } from "node:net";

export interface PemCertificate {
  cert: string;
  key: string;
}

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
}

const sequence = (...content: Buffer[]) => tlv(0x30, ...content);

function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split(".").map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const groups: number[] = [];
    for (let v = arc; ; v = Math.floor(v / 128)) {
      groups.unshift((v % 128) | (groups.length > 0 ? 0x80 : 0));
      if (v < 128) break;
    }
    bytes.push(...groups);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** GeneralizedTime for years from 2050 on, UTCTime before, as RFC 5280 requires. */
function time(at: Date): Buffer {
  const iso = at.toISOString().replace(/[-:T]/g, "").slice(0, 14);
  return at.getUTCFullYear() >= 2050
    ? tlv(0x18, Buffer.from(`${iso}Z`))
    : tlv(0x17, Buffer.from(`${iso.slice(2)}Z`));
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split(".").map(Number));
  const [head = "", tail = ""] = ip.split("::");
  const groups = (part: string) => (part === "" ? [] : part.split(":"));
  const left = groups(head);
  const right = ip.includes("::") ? groups(tail) : [];
  const all = [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return Buffer.concat(all.map((g) => Buffer.from(g.padStart(4, "0"), "hex")));
}

const ECDSA_WITH_SHA256 = sequence(oid("1.2.840.10045.4.3.2"));

/** A certificate valid from `now` for `days` days for the given DNS names and IP addresses. */
export function selfSignedCertificate(hosts: readonly string[], now: Date, days = 365): PemCertificate {
  const [commonName = "localhost"] = hosts;
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const name = sequence(tlv(0x31, sequence(oid("2.5.4.3"), tlv(0x0c, Buffer.from(commonName)))));
  const altNames = sequence(
    ...hosts.map((host) => (isIP(host) ? tlv(0x87, ipBytes(host)) : tlv(0x82, Buffer.from(host)))),
  );
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const tbs = sequence(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    tlv(0x02, serial),
    ECDSA_WITH_SHA256,
    name,
    sequence(time(now), time(new Date(now.getTime() + days * 86_400_000))),
    name,
    publicKey.export({ format: "der", type: "spki" }),
    tlv(0xa3, sequence(sequence(oid("2.5.29.17"), tlv(0x04, altNames)))),
  );
  const signature = sign("sha256", tbs, privateKey);
  const der = sequence(tbs, ECDSA_WITH_SHA256, tlv(0x03, Buffer.from([0]), signature));
  const base64 = der.toString("base64").replace(/.{1,64}/g, "$&\n");
  return {
    cert: `-----BEGIN CERTIFICATE-----\n${base64}-----END CERTIFICATE-----\n`,
    key: privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
  };
}
