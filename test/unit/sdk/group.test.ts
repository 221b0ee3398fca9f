// AgentGroup over the FakeClient: members named as programs address them, exec's exit codes as
// vk-cocoon reports them, the files' commands, and the errors' reasons.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonRestore } from "../../../src/apis/v1alpha1/types.ts";
import { COCOONCHECKPOINTS, COCOONRESTORES, COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import { writeFileCommand } from "../../../src/sdk/files.ts";
import { type CocoonError, CocoonNotFoundError, CocoonOperationError } from "../../../src/sdk/index.ts";
import { COUNTS, env, NS, seedPod, seedSet, until, writeSetStatus } from "./harness.ts";

const SLOT = "cocoonset.cocoonstack.io/slot";
const ROLE = "cocoonset.cocoonstack.io/role";

async function group() {
  const e = env();
  seedSet(e, { agent: { image: "img", replicas: 2 }, toolboxes: [{ name: "tb", image: "tools" }] });
  seedPod(e, "demo-0", { [SLOT]: "0", [ROLE]: "main" });
  seedPod(e, "demo-2", { [SLOT]: "2", [ROLE]: "sub-agent" });
  return { e, g: await e.client.group("demo") };
}

describe("AgentGroup members", () => {
  it("names the main, sub-agents by slot and toolboxes by name, with their pods", async () => {
    const { g } = await group();
    assert.deepEqual(
      g.members.map((m) => [m.name, m.role, m.slot, m.toolbox, m.pod]),
      [
        ["main", "main", 0, undefined, "demo-0"],
        ["subagent-1", "subagent", 1, undefined, "demo-1"],
        ["subagent-2", "subagent", 2, undefined, "demo-2"],
        ["tb", "toolbox", undefined, "tb", "demo-tb"],
      ],
    );
    const main = g.member("main");
    assert.equal(main.ip, "10.0.0.7");
    assert.equal(main.node, "node-a");
    assert.equal(g.member(2).pod, "demo-2");
    assert.equal(g.member(main).name, "main");
    assert.equal(g.claim, undefined);
    assert.throws(
      () => g.member("subagent-9"),
      (err: CocoonError) => err.reason === "NoSuchMember",
    );
  });

  it("an unknown set is CocoonNotFoundError with reason NotFound", async () => {
    const e = env();
    const err = await e.client.group("ghost").then(
      () => assert.fail("resolved"),
      (x: unknown) => x,
    );
    assert.ok(err instanceof CocoonNotFoundError);
    assert.equal(err.reason, "NotFound");
    assert.equal(err.message, `cocoonset "ghost" not found in namespace "${NS}"`);
  });
});

describe("AgentGroup exec and files", () => {
  it("returns a non-zero exit as exitCode, from vk-cocoon's 'Process exited with status N'", async () => {
    const { e, g } = await group();
    e.fake.onExec((req) => (req.command[0] === "false" ? { exitCode: 7 } : { stdout: "hi\n", stderr: "w" }));
    assert.deepEqual(await g.exec("main", ["false"]), {
      exitCode: 7,
      stdout: "",
      stderr: "",
      stdoutTruncated: false,
      stderrTruncated: false,
    });
    const ok = await g.exec("subagent-2", ["sh", "-c", "echo hi"]);
    assert.deepEqual([ok.exitCode, ok.stdout, ok.stderr], [0, "hi\n", "w"]);
  });

  it("an exec vk-cocoon could not run is an error with reason ExecFailed; a missing pod PodNotFound", async () => {
    const { e, g } = await group();
    e.fake.onExec(() => ({ providerError: "pod has no live VM" }));
    await assert.rejects(g.exec("main", ["true"]), (err: CocoonError) => err.reason === "ExecFailed");
    await assert.rejects(
      g.exec("subagent-1", ["true"]),
      (err: CocoonError) => err instanceof CocoonNotFoundError,
    );
  });

  it("writes a file through the command's stdin and reads it back with cat", async () => {
    const { e, g } = await group();
    const files = new Map<string, Buffer>();
    e.fake.onExec((req) => {
      if (req.command[0] === "sh") {
        files.set(/^cat > '([^']*)'/.exec(req.command[2] ?? "")?.[1] ?? "", Buffer.from(req.stdin ?? []));
        return {};
      }
      const data = files.get(req.command[1] ?? "");
      return data ? { stdout: data } : { exitCode: 1, stderr: "No such file" };
    });
    const bytes = new Uint8Array([0, 1, 2, 255, 10]);
    await g.writeFile("main", "/tmp/task.bin", bytes, { mode: 0o600 });
    const execs = e.fake.calls.filter((c) => c.subresource === "exec");
    assert.deepEqual((execs[0]?.body as { command?: string[] } | undefined)?.command, [
      "sh",
      "-c",
      "cat > '/tmp/task.bin' && chmod 600 '/tmp/task.bin'",
    ]);
    assert.deepEqual(await g.readFile("main", "/tmp/task.bin"), bytes);
    assert.deepEqual(
      (e.fake.calls.filter((c) => c.subresource === "exec")[1]?.body as { command?: string[] } | undefined)
        ?.command,
      ["cat", "/tmp/task.bin"],
    );
    await assert.rejects(g.readFile("main", "/tmp/none"), (err: CocoonError) => err.reason === "ReadFailed");
  });

  it("quotes a path with a quote in it", () => {
    assert.deepEqual(writeFileCommand("/tmp/it's"), ["sh", "-c", "cat > '/tmp/it'\\''s'"]);
  });

  it("refuses a file larger than maxBytes with reason TooLarge", async () => {
    const { e, g } = await group();
    e.fake.onExec(() => ({ stdout: "x".repeat(100) }));
    await assert.rejects(
      g.readFile("main", "/big", { maxBytes: 10 }),
      (err: CocoonError) => err.reason === "TooLarge",
    );
  });
});

describe("operator reasons", () => {
  it("claiming from a missing pool is CocoonNotFoundError before any write", async () => {
    const e = env();
    const err = await e.client.claim("nopool").then(
      () => assert.fail("resolved"),
      (x: unknown) => x,
    );
    assert.ok(err instanceof CocoonNotFoundError);
    assert.equal(err.reason, "NotFound");
    assert.deepEqual(e.fake.writes(), []);
  });

  it("a refused restore carries the operator's reason", async () => {
    const { e, g } = await group();
    e.fake.seed(COCOONCHECKPOINTS, {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonCheckpoint",
      metadata: { name: "ck", namespace: NS },
      spec: { cocoonSetRef: { name: "demo" } },
      status: { phase: "Ready" },
    });
    const done = g.restore("ck", { name: "r1" });
    done.catch(() => {});
    await until(() => e.watcher.open(COCOONRESTORES).length === 1, "the restore's watch");
    const r = e.fake.peek<CocoonRestore>(COCOONRESTORES, NS, "r1") as CocoonRestore;
    e.fake.seed(COCOONRESTORES, {
      ...r,
      status: { phase: "Failed", reason: "BindRefused", message: "image differs" },
    });
    e.watcher
      .open(COCOONRESTORES)[0]
      ?.push({ type: "MODIFIED", object: e.fake.peek(COCOONRESTORES, NS, "r1") });
    const err = await done.then(
      () => assert.fail("resolved"),
      (x: unknown) => x,
    );
    assert.ok(err instanceof CocoonOperationError, String(err));
    assert.equal(err.reason, "BindRefused");
    assert.match(err.detail, /image differs/);
  });
});

describe("CocoonClient.branch", () => {
  const seedCheckpoint = (e: ReturnType<typeof env>) =>
    e.fake.seed(COCOONCHECKPOINTS, {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonCheckpoint",
      metadata: { name: "ck", namespace: NS },
      spec: { cocoonSetRef: { name: "demo" } },
      status: { phase: "Ready" },
    });

  const branches = (e: ReturnType<typeof env>) =>
    e.fake.all<CocoonSet>(COCOONSETS, NS).filter((cs) => cs.metadata.name !== "demo");

  it("creates count sets from the checkpoint and resolves once each is Running", async () => {
    const e = env();
    seedSet(e, { suspend: true, nodeName: "node-a" });
    seedCheckpoint(e);
    const done = e.client.branch("ck", { count: 2, namePrefix: "run" });
    await until(() => e.watcher.open(COCOONSETS).length === 2, "a watch per fork");
    const forks = branches(e);
    assert.equal(forks.length, 2);
    for (const cs of forks) {
      assert.match(cs.metadata.name ?? "", /^run-[a-z0-9]{5}$/);
      assert.equal(cs.metadata.annotations?.["cocoonset.cocoonstack.io/from-checkpoint"], "ck");
      assert.equal(cs.spec.suspend, undefined, "the source's suspend is not copied");
      assert.equal(cs.spec.nodeName, undefined, "nor its node");
      const ready = writeSetStatus(
        e,
        {
          ...COUNTS,
          observedGeneration: 1,
          phase: "Running",
          conditions: [
            {
              type: "Ready",
              status: "True",
              reason: "",
              message: "",
              observedGeneration: 1,
              lastTransitionTime: "",
            },
          ],
        },
        cs.metadata.name,
      );
      const stream = e.watcher
        .open(COCOONSETS)
        .find((s) => s.opts.fieldSelector === `metadata.name=${cs.metadata.name}`);
      stream?.push({ type: "MODIFIED", object: ready });
    }
    const groups = await done;
    assert.deepEqual(groups.map((g) => g.name).sort(), forks.map((cs) => cs.metadata.name).sort());
  });

  it("ends every fork's wait when one fails", async () => {
    const e = env();
    seedSet(e);
    seedCheckpoint(e);
    const done = e.client.branch("ck", { count: 2 });
    done.catch(() => {});
    await until(() => e.watcher.open(COCOONSETS).length === 2, "a watch per fork");
    const [first] = branches(e);
    const failed = writeSetStatus(
      e,
      { ...COUNTS, observedGeneration: 1, phase: "Failed" },
      first?.metadata.name,
    );
    e.watcher
      .open(COCOONSETS)
      .find((s) => s.opts.fieldSelector === `metadata.name=${first?.metadata.name}`)
      ?.push({ type: "MODIFIED", object: failed });
    await assert.rejects(
      done,
      (err: CocoonError) => err instanceof CocoonOperationError && err.reason === "Failed",
    );
    await until(
      () => e.watcher.open(COCOONSETS).length === 0 && e.watcher.open(PODS).length === 0,
      "all closed",
    );
  });
});
