// Fixtures for the suspend, slot-release, wake and unsuspend steps (6, 9, 10): pods in the states
// vk-cocoon reports around a hibernate and a wake, one ordered timeline of API and registry calls
// (so a test can state "this write before that delete"), and metric reads.

import type { Counter } from "prom-client";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import {
  ANN_HIBERNATE,
  ANN_HIBERNATE_RECLAIM,
  ANN_LIFECYCLE_OBSERVED_GENERATION,
  ANN_LIFECYCLE_STATE,
  ANN_VM_ID,
  LIFECYCLE_HIBERNATED,
  LIFECYCLE_READY,
  TRUE,
} from "../../src/contract/keys.ts";
import type { ReclaimRecord } from "../../src/pass/reclaimrecord.ts";
import { readReclaim } from "../../src/pass/reclaimrecord.ts";
import type { Harness } from "./cocoonset.ts";
import { ready } from "./scaling.ts";

/** Hibernated by vk-cocoon at `generation`: annotation set, lifecycle hibernated, VM gone, on `node`. */
export function hibernated(pod: Pod, generation: number, node = "node-a"): Pod {
  pod.spec.nodeName = node;
  const annotations = { ...pod.metadata.annotations };
  delete annotations[ANN_VM_ID];
  pod.metadata.annotations = {
    ...annotations,
    [ANN_HIBERNATE]: TRUE,
    [ANN_LIFECYCLE_STATE]: LIFECYCLE_HIBERNATED,
    [ANN_LIFECYCLE_OBSERVED_GENERATION]: String(generation),
  };
  pod.status = { phase: "Pending", conditions: [{ type: "Ready", status: "False" }] };
  return pod;
}

/** Woken again: no hibernate annotation, a live VM on `node`, lifecycle ready at `generation`. */
export function woken(pod: Pod, generation: number, node = "node-a"): Pod {
  ready(pod, node);
  const annotations = { ...pod.metadata.annotations };
  delete annotations[ANN_HIBERNATE];
  pod.metadata.annotations = {
    ...annotations,
    [ANN_LIFECYCLE_STATE]: LIFECYCLE_READY,
    [ANN_LIFECYCLE_OBSERVED_GENERATION]: String(generation),
  };
  return pod;
}

/** Set the given annotations on the pod (null removes). */
export function annotate(pod: Pod, changes: Record<string, string | null>): Pod {
  const annotations = { ...pod.metadata.annotations };
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) delete annotations[key];
    else annotations[key] = value;
  }
  pod.metadata.annotations = annotations;
  return pod;
}

/** The reclaim record stored on the set. */
export function storedReclaim(cs: CocoonSet): ReclaimRecord {
  return readReclaim(cs.metadata.annotations?.[ANN_HIBERNATE_RECLAIM]).value;
}

function shortKey(key: string): string {
  return key.replace(/^(cocoonset|vm)\.cocoonstack\.io\//, "");
}

function describePatch(body: unknown, subresource: string | undefined): string {
  const b = body as {
    metadata?: { annotations?: Record<string, string | null> };
    status?: { phase?: string };
  };
  if (subresource === "status") return `status phase=${b.status?.phase ?? ""}`;
  const annotations = b.metadata?.annotations ?? {};
  return Object.entries(annotations)
    .map(([key, value]) => (value === null ? `${shortKey(key)}-` : `${shortKey(key)}=${value}`))
    .join(" ");
}

/**
 * From now on, every client write and uncached read and every registry call, in the order made:
 * `create pods/demo-0`, `patch pods/demo-0 hibernate=true`, `patch cocoonsets/demo status phase=X`,
 * `delete pods/demo-0`, `get pods/demo-0`, `registry hasManifest vk-ns-demo-0:hibernate`.
 * Reclaim-record patches read `patch cocoonsets/demo hibernate-reclaim=<json>`.
 */
export function timeline(h: Harness): string[] {
  const entries: string[] = [];
  const client = h.client;
  const { create, patch, delete: remove, get } = client;
  client.create = async <T>(...args: Parameters<typeof create>) => {
    entries.push(`create ${args[0].plural}/${(args[2] as Pod).metadata.name}`);
    return create.apply(client, args) as Promise<T>;
  };
  client.patch = async <T>(...args: Parameters<typeof patch>) => {
    entries.push(`patch ${args[0].plural}/${args[2]} ${describePatch(args[3], args[4]?.subresource)}`);
    return patch.apply(client, args) as Promise<T>;
  };
  client.delete = async (...args: Parameters<typeof remove>) => {
    entries.push(`delete ${args[0].plural}/${args[2]}`);
    return remove.apply(client, args);
  };
  client.get = async <T>(...args: Parameters<typeof get>) => {
    entries.push(`get ${args[0].plural}/${args[2]}`);
    return get.apply(client, args) as Promise<T>;
  };
  const registry = h.registry;
  const ops = [
    "hasManifest",
    "headManifest",
    "getSnapshot",
    "deleteManifest",
    "deleteTagAt",
    "deleteIfPresent",
  ] as const;
  for (const op of ops) {
    const original = registry[op].bind(registry) as (repo: string, ...rest: unknown[]) => Promise<unknown>;
    Object.assign(registry, {
      [op]: (repo: string, ...rest: unknown[]) => {
        const refs = rest.filter((arg) => typeof arg === "string");
        entries.push(`registry ${op} ${repo}:${refs.join("@")}`);
        return original(repo, ...rest);
      },
    });
  }
  return entries;
}

/** A counter's current value for the given labels (0 when never incremented). */
export async function counterValue(
  counter: Counter<string>,
  labels: Record<string, string>,
): Promise<number> {
  const metric = await counter.get();
  const match = metric.values.find((v) =>
    Object.entries(labels).every(([key, value]) => v.labels[key] === value),
  );
  return match?.value ?? 0;
}
