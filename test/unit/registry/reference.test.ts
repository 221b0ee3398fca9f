import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  isInsecureHost,
  manifestPath,
  parseRegistryBase,
  referenceString,
  repositoryPath,
} from "../../../src/registry/reference.ts";

describe("parseRegistryBase", () => {
  it("splits host and repository path", () => {
    assert.deepEqual(parseRegistryBase("asia-docker.pkg.dev/proj/repo"), {
      host: "asia-docker.pkg.dev",
      path: "proj/repo",
      insecure: false,
    });
    assert.deepEqual(parseRegistryBase("127.0.0.1:5000"), {
      host: "127.0.0.1:5000",
      path: "",
      insecure: true,
    });
    assert.deepEqual(parseRegistryBase("localhost/a/"), { host: "localhost", path: "a", insecure: true });
  });

  it("takes a first segment without dot, colon or localhost as a Docker Hub path", () => {
    assert.deepEqual(parseRegistryBase("myorg/snapshots"), {
      host: "index.docker.io",
      path: "myorg/snapshots",
      insecure: false,
    });
    assert.equal(parseRegistryBase("docker.io/myorg").host, "index.docker.io");
  });

  it("rejects an empty base and a base with a scheme", () => {
    assert.throws(() => parseRegistryBase(" "));
    assert.throws(() => parseRegistryBase("https://registry.example.com/x"));
  });
});

describe("isInsecureHost", () => {
  it("allows plain http for loopback and RFC 1918 hosts only", () => {
    for (const host of [
      "localhost",
      "localhost:5000",
      "reg.localhost:80",
      "127.0.0.1:5000",
      "[::1]:5000",
      "10.1.2.3",
      "172.16.0.1:5000",
      "172.31.255.255",
      "192.168.1.1:443",
    ]) {
      assert.equal(isInsecureHost(host), true, host);
    }
    for (const host of [
      "example.com",
      "172.32.0.1",
      "172.15.0.1",
      "192.169.0.1",
      "8.8.8.8:5000",
      "127.0.0.2",
    ]) {
      assert.equal(isInsecureHost(host), false, host);
    }
  });
});

describe("references", () => {
  const base = parseRegistryBase("r.example.com/proj/repo");
  it("forms tag and digest references and manifest paths", () => {
    assert.equal(repositoryPath(base, "vk-ns-demo-0"), "proj/repo/vk-ns-demo-0");
    assert.equal(
      referenceString(base, "vk-ns-demo-0", "hibernate"),
      "r.example.com/proj/repo/vk-ns-demo-0:hibernate",
    );
    assert.equal(referenceString(base, "vm", "sha256:ab"), "r.example.com/proj/repo/vm@sha256:ab");
    assert.equal(manifestPath(base, "vm", "latest"), "/v2/proj/repo/vm/manifests/latest");
    assert.equal(
      manifestPath(parseRegistryBase("127.0.0.1:5000"), "vm", "latest"),
      "/v2/vm/manifests/latest",
    );
  });
});
