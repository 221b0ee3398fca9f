import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  type Credential,
  dockerConfigKeychain,
  googleKeychain,
  isGoogleRegistry,
  type Keychain,
  multiKeychain,
} from "../../../src/registry/credentials.ts";

const dir = mkdtempSync(join(tmpdir(), "registry-credentials-test-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function writeConfig(name: string, config: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof config === "string" ? config : JSON.stringify(config));
  return path;
}

function warnings(): { logger: { warn(obj: object, msg: string): void }; seen: string[] } {
  const seen: string[] = [];
  return { seen, logger: { warn: (obj, msg) => seen.push(`${msg} ${JSON.stringify(obj)}`) } };
}

const b64 = (s: string) => Buffer.from(s).toString("base64");

describe("dockerConfigKeychain", () => {
  const path = writeConfig("config.json", {
    auths: {
      "reg.example.com": { auth: b64("alice:p:ss") },
      "https://other.example.com/v2/": { username: "bob", password: "pw" },
      "https://index.docker.io/v1/": { auth: b64("hub:hubpw") },
      "ident.example.com": { identitytoken: "refresh-123", auth: b64("ignored:x") },
      "rt.example.com": { registrytoken: "bearer-xyz" },
      "empty.example.com": {},
    },
    credHelpers: { "helped.example.com": "gcloud" },
  });
  const keychain = dockerConfigKeychain({ path });

  it("decodes base64 auth, splitting at the first colon", async () => {
    assert.deepEqual(await keychain.resolve("reg.example.com"), {
      kind: "basic",
      username: "alice",
      password: "p:ss",
    });
  });

  it("matches keys written as URLs and reads username/password", async () => {
    assert.deepEqual(await keychain.resolve("other.example.com"), {
      kind: "basic",
      username: "bob",
      password: "pw",
    });
    assert.deepEqual(await keychain.resolve("index.docker.io"), {
      kind: "basic",
      username: "hub",
      password: "hubpw",
    });
  });

  it("prefers identitytoken and reads registrytoken", async () => {
    assert.deepEqual(await keychain.resolve("ident.example.com"), {
      kind: "identityToken",
      token: "refresh-123",
    });
    assert.deepEqual(await keychain.resolve("rt.example.com"), {
      kind: "registryToken",
      token: "bearer-xyz",
    });
  });

  it("answers anonymous for unknown hosts, empty entries and a missing file", async () => {
    assert.deepEqual(await keychain.resolve("unknown.example.com"), { kind: "anonymous" });
    assert.deepEqual(await keychain.resolve("empty.example.com"), { kind: "anonymous" });
    const missing = warnings();
    const none = dockerConfigKeychain({ path: join(dir, "nope.json"), logger: missing.logger });
    assert.deepEqual(await none.resolve("reg.example.com"), { kind: "anonymous" });
    assert.deepEqual(missing.seen, []);
  });

  it("ignores credHelpers and credsStore with one warning each", async () => {
    const w = warnings();
    const helped = dockerConfigKeychain({ path, logger: w.logger });
    assert.deepEqual(await helped.resolve("helped.example.com"), { kind: "anonymous" });
    assert.deepEqual(await helped.resolve("helped.example.com"), { kind: "anonymous" });
    assert.equal(w.seen.length, 1);
    assert.match(w.seen[0] ?? "", /credHelpers/);

    const store = writeConfig("store.json", { credsStore: "desktop" });
    const s = warnings();
    assert.deepEqual(await dockerConfigKeychain({ path: store, logger: s.logger }).resolve("x.io"), {
      kind: "anonymous",
    });
    assert.match(s.seen[0] ?? "", /credsStore/);
  });

  it("warns about an unreadable config without logging its content", async () => {
    const bad = writeConfig("bad.json", '{"auths": {"r.io": {"auth": "c2VjcmV0OnNlY3JldA=="}');
    const w = warnings();
    assert.deepEqual(await dockerConfigKeychain({ path: bad, logger: w.logger }).resolve("r.io"), {
      kind: "anonymous",
    });
    assert.equal(w.seen.length, 1);
    assert.doesNotMatch(w.seen[0] ?? "", /c2VjcmV0|secret/);
  });

  it("uses $DOCKER_CONFIG when no path is given", async () => {
    const configDir = mkdtempSync(join(dir, "docker-"));
    writeFileSync(
      join(configDir, "config.json"),
      JSON.stringify({ auths: { "e.io": { auth: b64("u:p") } } }),
    );
    const saved = process.env.DOCKER_CONFIG;
    process.env.DOCKER_CONFIG = configDir;
    try {
      assert.deepEqual(await dockerConfigKeychain().resolve("e.io"), {
        kind: "basic",
        username: "u",
        password: "p",
      });
    } finally {
      if (saved === undefined) delete process.env.DOCKER_CONFIG;
      else process.env.DOCKER_CONFIG = saved;
    }
  });
});

describe("googleKeychain", () => {
  it("recognises Google registry hosts", () => {
    for (const host of ["gcr.io", "eu.gcr.io", "asia-docker.pkg.dev", "x.google.com:443"]) {
      assert.equal(isGoogleRegistry(host), true, host);
    }
    for (const host of ["pkg.dev.example.com", "gcr.io.evil.com", "127.0.0.1:5000"]) {
      assert.equal(isGoogleRegistry(host), false, host);
    }
  });

  it("presents the ADC access token as _token for Google hosts only", async () => {
    let created = 0;
    const keychain = googleKeychain({
      tokenSource: async () => {
        created++;
        return { getAccessToken: async () => "ya29.token" };
      },
    });
    assert.deepEqual(await keychain.resolve("example.com"), { kind: "anonymous" });
    assert.equal(created, 0);
    assert.deepEqual(await keychain.resolve("europe-docker.pkg.dev"), {
      kind: "basic",
      username: "_token",
      password: "ya29.token",
    });
    await keychain.resolve("gcr.io");
    assert.equal(created, 1);
  });

  it("answers anonymous with one warning when there are no default credentials", async () => {
    const w = warnings();
    const keychain = googleKeychain({
      logger: w.logger,
      tokenSource: async () => ({
        getAccessToken: () => Promise.reject(new Error("Could not load the default credentials")),
      }),
    });
    assert.deepEqual(await keychain.resolve("gcr.io"), { kind: "anonymous" });
    assert.deepEqual(await keychain.resolve("gcr.io"), { kind: "anonymous" });
    assert.equal(w.seen.length, 1);
  });
});

describe("multiKeychain", () => {
  const fixed = (credential: Credential): Keychain => ({ resolve: async () => credential });
  it("returns the first non-anonymous answer", async () => {
    const basic: Credential = { kind: "basic", username: "a", password: "b" };
    assert.deepEqual(
      await multiKeychain([
        fixed({ kind: "anonymous" }),
        fixed(basic),
        fixed({ kind: "registryToken", token: "t" }),
      ]).resolve("h"),
      basic,
    );
    assert.deepEqual(await multiKeychain([fixed({ kind: "anonymous" })]).resolve("h"), { kind: "anonymous" });
  });
});
