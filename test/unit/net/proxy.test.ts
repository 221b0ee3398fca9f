// Proxy selection as Go's http.ProxyFromEnvironment (golang.org/x/net/http/httpproxy) makes it, and
// a kubeconfig proxy-url as client-go applies it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fixedProxy, parseIP, proxyFromEnvironment } from "../../../src/net/proxy.ts";

const HTTPS = "http://https-proxy.corp:3128/";
const HTTP = "http://http-proxy.corp:3128/";

function proxyFor(env: Record<string, string>, target: string): string | undefined {
  return proxyFromEnvironment(env)(new URL(target))?.href;
}

/** [NO_PROXY, target, proxied] rows, with HTTPS_PROXY set. */
function assertNoProxyCases(cases: [string, string, boolean][]): void {
  for (const [noProxy, target, proxied] of cases) {
    const got = proxyFor({ HTTPS_PROXY: HTTPS, NO_PROXY: noProxy }, target);
    assert.equal(got, proxied ? HTTPS : undefined, `${noProxy} / ${target}`);
  }
}

describe("proxyFromEnvironment", () => {
  it("HTTPS_PROXY for https targets, HTTP_PROXY for http ones, and never the other", () => {
    const env = { HTTPS_PROXY: HTTPS, HTTP_PROXY: HTTP };
    assert.equal(proxyFor(env, "https://registry.example/v2/"), HTTPS);
    assert.equal(proxyFor(env, "http://registry.example/v2/"), HTTP);
    assert.equal(proxyFor({ HTTP_PROXY: HTTP }, "https://registry.example/v2/"), undefined);
    assert.equal(proxyFor({ HTTPS_PROXY: HTTPS }, "http://registry.example/v2/"), undefined);
  });

  it("reads the lower-case names when the upper-case ones are unset or empty", () => {
    assert.equal(proxyFor({ https_proxy: HTTPS }, "https://a.example"), HTTPS);
    assert.equal(proxyFor({ HTTPS_PROXY: "", https_proxy: HTTPS }, "https://a.example"), HTTPS);
    assert.equal(proxyFor({ HTTPS_PROXY: HTTPS, https_proxy: "http://other:1" }, "https://a.example"), HTTPS);
    assert.equal(proxyFor({ HTTPS_PROXY: HTTPS, no_proxy: "a.example" }, "https://a.example"), undefined);
  });

  it("takes a proxy without a scheme as http://", () => {
    assert.equal(
      proxyFor({ HTTPS_PROXY: "proxy.corp:3128" }, "https://a.example"),
      "http://proxy.corp:3128/",
    );
    assert.equal(proxyFor({ HTTPS_PROXY: "10.0.0.9:3128" }, "https://a.example"), "http://10.0.0.9:3128/");
  });

  it("never proxies localhost or a loopback address, whatever NO_PROXY says", () => {
    const env = { HTTPS_PROXY: HTTPS, HTTP_PROXY: HTTP };
    for (const target of [
      "https://localhost:6443",
      "http://localhost:5000",
      "https://127.0.0.1:6443",
      "https://127.3.4.5",
      "https://[::1]:6443",
      "https://[::ffff:127.0.0.1]:6443",
    ]) {
      assert.equal(proxyFor(env, target), undefined, target);
    }
    // Only the exact name: another name that happens to resolve to 127.0.0.1 is proxied, as in Go.
    assert.equal(proxyFor(env, "https://localhost.example:6443"), HTTPS);
  });

  it("NO_PROXY: domains match themselves and their subdomains; .domain and *.domain only subdomains", () => {
    assertNoProxyCases([
      ["corp.example", "https://corp.example", false],
      ["corp.example", "https://registry.corp.example", false],
      ["corp.example", "https://notcorp.example", true],
      [".corp.example", "https://corp.example", true],
      [".corp.example", "https://registry.corp.example", false],
      ["*.corp.example", "https://registry.corp.example", false],
      ["*.corp.example", "https://corp.example", true],
      ["CORP.Example ", "https://registry.corp.example", false],
      ["other.example, corp.example", "https://registry.corp.example", false],
      ["corp.example:5000", "https://registry.corp.example:5000", false],
      ["corp.example:5000", "https://registry.corp.example", true],
      ["corp.example:443", "https://registry.corp.example", false],
      ["*", "https://anything.example", false],
      ["*", "https://10.0.0.1", false],
      ["bücher.example", "https://xn--bcher-kva.example", false],
      // A domain entry never matches an IP address.
      ["10.example", "https://10.0.0.1", true],
    ]);
  });

  it("NO_PROXY: IP addresses (with an optional port) and CIDR ranges match IP targets", () => {
    assertNoProxyCases([
      ["10.96.0.1", "https://10.96.0.1:443", false],
      ["10.96.0.1:443", "https://10.96.0.1", false],
      ["10.96.0.1:6443", "https://10.96.0.1", true],
      ["10.96.0.0/12", "https://10.100.7.8", false],
      ["10.96.0.0/12", "https://10.112.0.1", true],
      ["10.96.0.0/12", "https://[::ffff:10.96.0.1]", false],
      ["fd00::/8", "https://[fd12::1]:443", false],
      ["fd00::/8", "https://[fe80::1]", true],
      ["[fd00::1]:443", "https://[fd00::1]", false],
      ["[fd00::1]", "https://[fd00::1]", true],
      ["fd00::1", "https://[fd00:0:0::1]", false],
      ["10.0.0.0/8", "https://ten.example", true],
      [":443", "https://10.0.0.1", true],
    ]);
  });

  it("refuses HTTP_PROXY in a CGI process and a proxy scheme Node cannot tunnel", () => {
    const cgi = proxyFromEnvironment({ HTTP_PROXY: HTTP, REQUEST_METHOD: "GET" });
    assert.throws(
      () => cgi(new URL("http://a.example")),
      /refusing to use HTTP_PROXY value in CGI environment/,
    );
    assert.equal(
      proxyFromEnvironment({ HTTPS_PROXY: HTTPS, REQUEST_METHOD: "GET" })(new URL("https://a.example"))?.href,
      HTTPS,
    );
    assert.throws(
      () => proxyFromEnvironment({ https_proxy: "socks5://127.0.0.1:1080" }),
      /https_proxy=socks5:\/\/127\.0\.0\.1:1080: only http:\/\/ and https:\/\/ proxies are supported/,
    );
  });

  it("connects directly without any proxy variable", () => {
    assert.equal(proxyFor({ NO_PROXY: "x" }, "https://a.example"), undefined);
  });
});

describe("fixedProxy (kubeconfig proxy-url)", () => {
  it("sends every request through the proxy, loopback included", () => {
    const select = fixedProxy("http://proxy.corp:3128", "cluster");
    assert.equal(select(new URL("https://127.0.0.1:6443"))?.href, "http://proxy.corp:3128/");
    assert.equal(select(new URL("https://api.example"))?.href, "http://proxy.corp:3128/");
  });
});

describe("parseIP", () => {
  it("reads IPv4 (no leading zeros) and IPv6, as Go's net.ParseIP", () => {
    assert.deepEqual(parseIP("10.0.0.1")?.slice(10), [0xff, 0xff, 10, 0, 0, 1]);
    assert.equal(parseIP("010.0.0.1"), undefined);
    assert.equal(parseIP("256.0.0.1"), undefined);
    assert.equal(parseIP("10.0.1"), undefined);
    assert.deepEqual(parseIP("::1")?.slice(14), [0, 1]);
    assert.deepEqual(parseIP("fd00::1"), parseIP("fd00:0:0:0:0:0:0:1"));
    assert.deepEqual(parseIP("::ffff:10.0.0.1"), parseIP("10.0.0.1"));
    assert.equal(parseIP("fe80::1%eth0"), undefined);
    assert.equal(parseIP("1::2::3"), undefined);
    assert.equal(parseIP("registry.example"), undefined);
  });
});
