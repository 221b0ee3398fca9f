// --dry-run as kubectl has it. client: nothing is sent that writes; a patch is applied to the object
// as read, a create answers with the object given. server: every write is sent with dryRun=All, so
// the API server validates and admits it (the CRD's schema and rules, admission policies) and stores
// nothing. Either way the output says what would have been written.

import type { Client, WriteOptions } from "../controller/client.ts";
import { applyMergePatch } from "../controller/mergepatch.ts";
import type { ResourceType } from "../controller/resources.ts";
import { UsageError } from "./errors.ts";
import type { FlagSpec } from "./flags.ts";

export const DRY_RUN_MODES = ["none", "client", "server"] as const;
export type DryRun = (typeof DRY_RUN_MODES)[number];

export const DRY_RUN_FLAG: FlagSpec = {
  name: "dry-run",
  kind: "string",
  value: "none|client|server",
  help: "client: print what would be written, send no write; server: the API server admits the write and stores nothing",
};

export function parseDryRun(value: string | undefined): DryRun {
  if (value === undefined || value === "") return "none";
  if ((DRY_RUN_MODES as readonly string[]).includes(value)) return value as DryRun;
  throw new UsageError(`invalid --dry-run "${value}": want one of ${DRY_RUN_MODES.join(", ")}`);
}

/** What a line about a write ends with: "", " (dry run)" or " (server dry run)", as kubectl prints. */
export function dryRunSuffix(mode: DryRun): string {
  return mode === "client" ? " (dry run)" : mode === "server" ? " (server dry run)" : "";
}

/** The client the commands write through under `mode`. */
export function dryRunClient(client: Client, mode: DryRun): Client {
  if (mode === "none") return client;
  const server: WriteOptions = { dryRun: true };
  return {
    get: (rt, namespace, name) => client.get(rt, namespace, name),
    list: (rt, namespace, opts) => client.list(rt, namespace, opts),
    async create<T>(rt: ResourceType, namespace: string, obj: T): Promise<T> {
      if (mode === "server") return client.create(rt, namespace, obj, server);
      const meta = (obj as { metadata?: object }).metadata;
      return { ...obj, metadata: { ...meta, namespace, generation: 1 } };
    },
    async update(rt) {
      throw new Error(`update ${rt.plural}: the plugin writes by merge patch only`);
    },
    async patch<T>(
      rt: ResourceType,
      namespace: string,
      name: string,
      mergePatch: unknown,
      opts: { subresource?: "status" } = {},
    ): Promise<T> {
      if (mode === "server") return client.patch<T>(rt, namespace, name, mergePatch, { ...opts, ...server });
      return applyMergePatch(await client.get(rt, namespace, name), mergePatch) as T;
    },
    async delete(rt) {
      throw new Error(`delete ${rt.plural}: the plugin deletes nothing`);
    },
  };
}
