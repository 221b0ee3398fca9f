// Finding of the reliability suite: after one 401 whose bearer realm cannot issue a token, the registry
// client kept the challenge and sent every later call to that realm first, so it never reached the
// registry again even once the registry served anonymously: the operator wedged until restarted.
// The client now forgets a challenge it cannot get a token for (src/registry/session.ts).

import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { createRegistryClient } from "../../src/registry/index.ts";
import { testEnv } from "../env/testenv.ts";
import { type RegistryProxy, startRegistryProxy } from "../support/faultproxy.ts";

let proxy: RegistryProxy;

before(async () => {
  proxy = await startRegistryProxy(testEnv().registry);
});

after(async () => {
  await proxy?.stop();
});

it("reaches the registry again after a 401 it could not answer", async () => {
  const client = createRegistryClient(proxy.host, { timeoutMs: 5_000, dockerConfigPath: "/nonexistent" });
  assert.equal(await client.hasManifest("recovery-probe", "hibernate"), false);
  await proxy.setFault("401");
  await assert.rejects(client.hasManifest("recovery-probe", "hibernate"));
  await assert.rejects(client.hasManifest("recovery-probe", "hibernate"));
  await proxy.setFault("none");
  const before = proxy.requests.length;
  assert.equal(await client.hasManifest("recovery-probe", "hibernate"), false);
  assert.ok(
    proxy.requests.slice(before).some((r) => r.path.includes("/manifests/hibernate") && r.status === 404),
    "the probe reached the registry",
  );
});
