// rest_client_requests_total{host} as client-go writes it: the server URL's host as written, so the
// in-cluster address keeps its default port (10.96.0.1:443), which WHATWG URL.host would drop.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { anonymousClient } from "../../support/kubeclient.ts";

describe("KubeClient host label", () => {
  const cases: [string, string][] = [
    ["https://10.96.0.1:443", "10.96.0.1:443"],
    ["http://127.0.0.1:80/", "127.0.0.1:80"],
    ["https://[fd00::1]:443/k8s/clusters/c-1", "[fd00::1]:443"],
    ["https://api.example.com", "api.example.com"],
    ["https://api.example.com:6443", "api.example.com:6443"],
  ];
  for (const [server, host] of cases) {
    it(`${server} → ${host}`, () => assert.equal(anonymousClient(server).host, host));
  }
});
