// A scripted pod API for the named-pod reads of the CocoonHibernation controller: pods by name with a
// resourceVersion counter, list by metadata.name, a watch the test feeds, and get; every call journaled.

import type { Pod } from "../../../src/apis/core.ts";
import type {
  Client,
  ListOptions,
  ListResult,
  WatchClient,
  WatchEvent,
  WatchOptions,
} from "../../../src/controller/client.ts";
import { GoneError, NotFoundError } from "../../../src/controller/errors.ts";
import type { ResourceType } from "../../../src/controller/resources.ts";

interface Stream {
  queue: WatchEvent<unknown>[];
  wake: (() => void) | undefined;
  signal: AbortSignal;
}

export class PodApi implements Client, WatchClient {
  version = 100;
  readonly calls: string[] = [];
  readonly pods = new Map<string, Pod>();
  readonly streams: Stream[] = [];
  /** The next watch answers 410. */
  gone = false;

  put(pod: Pod): Pod {
    const stored = structuredClone(pod);
    stored.metadata.resourceVersion = String(++this.version);
    const existed = this.pods.has(stored.metadata.name ?? "");
    this.pods.set(stored.metadata.name ?? "", stored);
    this.emit(existed ? "MODIFIED" : "ADDED", stored);
    return stored;
  }

  /** Sends an event to every open watch as is (a replay keeps its old resourceVersion). */
  emit(type: "ADDED" | "MODIFIED" | "DELETED", pod: Pod): void {
    for (const stream of this.streams) {
      if (stream.signal.aborted) continue;
      stream.queue.push({ type, object: structuredClone(pod) });
      stream.wake?.();
    }
  }

  async get<T>(_rt: ResourceType, _namespace: string, name: string): Promise<T> {
    this.calls.push(`get ${name}`);
    const pod = this.pods.get(name);
    if (!pod) throw new NotFoundError(404, "NotFound", `pods "${name}" not found`);
    return structuredClone(pod) as T;
  }

  async list<T>(
    _rt: ResourceType,
    _namespace: string | undefined,
    opts?: ListOptions,
  ): Promise<ListResult<T>> {
    this.calls.push(`list ${opts?.fieldSelector ?? "(all)"}`);
    const name = opts?.fieldSelector?.replace(/^metadata\.name=/, "");
    const items = [...this.pods.values()].filter((pod) => name === undefined || pod.metadata.name === name);
    return { items: structuredClone(items) as T[], resourceVersion: String(this.version) };
  }

  async *watch<T>(
    _rt: ResourceType,
    namespace: string | undefined,
    opts: WatchOptions,
  ): AsyncGenerator<WatchEvent<T>, void, undefined> {
    this.calls.push(`watch ${namespace ?? "(all)"} from ${opts.resourceVersion}`);
    if (this.gone) {
      this.gone = false;
      throw new GoneError(410, "Expired", "too old resource version");
    }
    const signal = opts.signal ?? new AbortController().signal;
    const stream: Stream = { queue: [], wake: undefined, signal };
    this.streams.push(stream);
    while (!signal.aborted) {
      const event = stream.queue.shift();
      if (event) {
        yield event as WatchEvent<T>;
        continue;
      }
      await new Promise<void>((resolve) => {
        stream.wake = resolve;
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
    }
  }

  create<T>(): Promise<T> {
    throw new Error("not used");
  }
  update<T>(): Promise<T> {
    throw new Error("not used");
  }
  patch<T>(): Promise<T> {
    throw new Error("not used");
  }
  delete(): Promise<void> {
    throw new Error("not used");
  }
}
