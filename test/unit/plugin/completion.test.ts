import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { COCOONSETS, NODES, PODS } from "../../../src/controller/resources.ts";
import { GLOBAL_FLAGS } from "../../../src/plugin/cli.ts";
import { COMMANDS } from "../../../src/plugin/commands/index.ts";
import { complete } from "../../../src/plugin/completion.ts";
import { testContext } from "./context.ts";

const ctx = testContext();
ctx.fake.seed<CocoonSet>(COCOONSETS, {
  apiVersion: "cocoonset.cocoonstack.io/v1",
  kind: "CocoonSet",
  metadata: { name: "demo", namespace: "ns" },
  spec: { agent: { image: "img" } },
});
ctx.fake.seed(PODS, {
  metadata: { name: "demo-0", namespace: "ns", annotations: { "vm.cocoonstack.io/name": "vk" } },
  spec: { containers: [] },
});
ctx.fake.seed(PODS, { metadata: { name: "web", namespace: "ns" }, spec: { containers: [] } });
ctx.fake.seed(NODES, { metadata: { name: "node-b" } });
const sources = { context: () => ctx, contexts: () => ["prod", "dev"] };
const ask = (...words: string[]) => complete(words, COMMANDS, GLOBAL_FLAGS, ["completion", "help"], sources);

describe("complete (cobra's __complete protocol)", () => {
  it("offers commands, then the argument the command takes, without file completion", async () => {
    assert.equal(await ask("su"), "suspend\n:4");
    assert.equal(await ask("help", "mi"), "migrate\n:4");
    assert.equal(await ask("-n", "ns", "suspend", ""), "demo\n:4");
    assert.equal(await ask("hibernate", ""), "demo-0\n:4", "only pods vk-cocoon runs a VM for");
    assert.equal(await ask("migrate", "demo", "--to", ""), "node-b\n:4");
  });

  it("offers flag names and flag values", async () => {
    assert.equal(await ask("suspend", "--rel"), "--release\n:4");
    assert.equal(await ask("status", "-o", ""), "wide\njson\nyaml\nname\n:4");
    assert.equal(await ask("--context", "d"), "dev\n:4");
    assert.equal(await ask("--kubeconfig", ""), "\n:0", "file completion for --kubeconfig");
  });
});
