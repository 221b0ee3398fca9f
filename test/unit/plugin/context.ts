// A CommandContext over the in-memory FakeClient, with a fixed clock and captured output.
import assert from "node:assert/strict";
import type { Command, CommandContext } from "../../../src/plugin/command.ts";
import { type DryRun, dryRunClient } from "../../../src/plugin/dryrun.ts";
import { PluginError } from "../../../src/plugin/errors.ts";
import { parseArgs } from "../../../src/plugin/flags.ts";
import type { OutputFormat } from "../../../src/plugin/output.ts";
import type { RegistryClient } from "../../../src/registry/index.ts";
import { FakeClient } from "../../support/fakeclient.ts";

export const NOW = Date.parse("2026-05-14T12:00:00Z");

export interface TestContext extends CommandContext {
  fake: FakeClient;
  /** Runs at every sleep of the command, after the clock has moved by the sleep. */
  onSleep: (sleptMs: number) => void;
  stdout: string[];
  stderr: string[];
}

export function testContext(
  opts: { output?: OutputFormat; registry?: RegistryClient; namespace?: string; dryRun?: DryRun } = {},
): TestContext {
  const fake = new FakeClient();
  const stdout: string[] = [];
  const stderr: string[] = [];
  let now = NOW;
  const ctx: TestContext = {
    fake,
    onSleep: () => {},
    stdout,
    stderr,
    client: dryRunClient(fake, opts.dryRun ?? "none"),
    dryRun: opts.dryRun ?? "none",
    namespace: opts.namespace ?? "ns",
    output: opts.output ?? "table",
    out: (text) => stdout.push(text),
    info: (text) => stderr.push(text),
    now: () => now,
    serverNow: () => now,
    sleep: async (ms) => {
      now += ms;
      ctx.onSleep(now - NOW);
    },
    registry: async () => opts.registry,
  };
  return ctx;
}

/** Runs the command as the CLI would after parsing `argv` with the command's flags. */
export function run(ctx: TestContext, command: Command, argv: string[]): Promise<void> {
  return command.run(ctx, parseArgs(argv, command.flags));
}

/** The PluginError the command fails with; fails the test when it succeeds. */
export async function rejection(promise: Promise<unknown>): Promise<PluginError> {
  const err = await promise.then(
    () => assert.fail("expected the command to fail"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof PluginError, String(err));
  return err;
}
