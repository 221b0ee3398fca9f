// Certificates for the TLS endpoints tests stand up on loopback (the registry's token server, the
// fault proxy before kube-apiserver, kubeconfig and proxy tests), made with openssl.

import { execFileSync } from "node:child_process";
import { join } from "node:path";

export interface CertificateFiles {
  certFile: string;
  keyFile: string;
}

/**
 * A self-signed certificate and its unencrypted key, written into `dir` as `<name>.crt` and
 * `<name>.key`. The key is EC P-256 unless `rsa` (a JWT signer needs RS256); `altNames` is the
 * subjectAltName list, e.g. "IP:127.0.0.1,DNS:localhost".
 */
export function selfSignedCertificate(
  dir: string,
  name: string,
  opts: { subject: string; altNames?: string; rsa?: boolean; days?: number },
): CertificateFiles {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  const key = opts.rsa
    ? ["-newkey", "rsa:2048"]
    : ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      ...key,
      "-nodes",
      "-days",
      String(opts.days ?? 1),
      "-subj",
      opts.subject,
      ...(opts.altNames ? ["-addext", `subjectAltName=${opts.altNames}`] : []),
      "-keyout",
      keyFile,
      "-out",
      certFile,
    ],
    { stdio: "ignore" },
  );
  return { certFile, keyFile };
}
