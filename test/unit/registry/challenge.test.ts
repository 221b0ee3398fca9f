import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseChallenge } from "../../../src/registry/challenge.ts";

describe("parseChallenge", () => {
  it("parses a Bearer challenge with quoted parameters", () => {
    assert.deepEqual(
      parseChallenge(
        'Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:a/b:pull,push"',
      ),
      {
        scheme: "bearer",
        params: {
          realm: "https://auth.example.com/token",
          service: "registry.example.com",
          scope: "repository:a/b:pull,push",
        },
      },
    );
  });

  it("parses Basic, unquoted values and escapes", () => {
    assert.deepEqual(parseChallenge('basic Realm="a \\"b\\"", charset=UTF-8'), {
      scheme: "basic",
      params: { realm: 'a "b"', charset: "UTF-8" },
    });
  });

  it("ignores missing and unknown schemes", () => {
    assert.equal(parseChallenge(null), undefined);
    assert.equal(parseChallenge(""), undefined);
    assert.equal(parseChallenge('Negotiate realm="x"'), undefined);
  });
});
