// For unit tests of a controller's wiring (which keys an object's change queues, which cached reads
// its reconciler gets, what the manager starts): a list/watch transport over FakeClient's store (real
// informers list what the store holds, then each watch streams the changes the test announces and
// stays open until the informers stop), and a manager that records what setup hands it.
import type {
  ListOptions,
  ListResult,
  WatchClient,
  WatchEvent,
  WatchOptions,
} from "../../src/controller/client.ts";
import type { Controller } from "../../src/controller/controller.ts";
import { type ManagedInformer, Manager } from "../../src/controller/manager.ts";
import type { ResourceType } from "../../src/controller/resources.ts";
import type { FakeClient } from "./fakeclient.ts";

interface Stream {
  resource: string;
  send(event: WatchEvent<unknown>): void;
}

export class ListWatch implements WatchClient {
  private readonly client: FakeClient;
  private readonly streams = new Set<Stream>();
  private readonly stop = new AbortController();

  constructor(client: FakeClient) {
    this.client = client;
  }

  /** The signal to start the informers with; `close` aborts it. */
  get signal(): AbortSignal {
    return this.stop.signal;
  }

  close(): void {
    this.stop.abort();
  }

  async list<T>(
    rt: ResourceType,
    namespace: string | undefined,
    opts: ListOptions<T> = {},
  ): Promise<ListResult<T>> {
    const items = this.client.all<T>(rt, namespace);
    return {
      items: items.map((item) => (opts.transform ? opts.transform(item) : item)),
      resourceVersion: "1",
    };
  }

  async *watch<T>(
    rt: ResourceType,
    _namespace: string | undefined,
    opts: WatchOptions,
  ): AsyncIterable<WatchEvent<T>> {
    const queued: WatchEvent<T>[] = [];
    let wake: (() => void) | undefined;
    const stream: Stream = {
      resource: rt.plural,
      send: (event) => {
        queued.push(event as WatchEvent<T>);
        wake?.();
      },
    };
    this.streams.add(stream);
    try {
      while (!opts.signal?.aborted) {
        const event = queued.shift();
        if (event) {
          yield event;
          continue;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          opts.signal?.addEventListener("abort", () => resolve(), { once: true });
        });
      }
    } finally {
      this.streams.delete(stream);
    }
  }

  /** Streams the store's object as it now is (MODIFIED) to the watches of its resource, and lets them apply it. */
  async modified(rt: ResourceType, namespace: string, name: string): Promise<void> {
    const obj = this.client.peek(rt, namespace, name);
    if (!obj) throw new Error(`${rt.plural} ${namespace}/${name} is not in the store`);
    for (const stream of this.streams)
      if (stream.resource === rt.plural) stream.send({ type: "MODIFIED", object: obj });
    await settle();
  }
}

/** Lets queued promise callbacks and I/O callbacks run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Every key waiting in the controller's queue, drained, sorted. */
export async function drain(controller: Controller): Promise<string[]> {
  const keys: string[] = [];
  while (controller.queue.len() > 0) {
    const key = await controller.queue.get();
    if (key === undefined) break;
    keys.push(key);
    controller.queue.done(key);
  }
  return keys.sort();
}

/** A manager that records what setup hands it to start. */
export class RecordingManager extends Manager {
  readonly informersToStart: unknown[] = [];
  readonly controllersToStart: Controller[] = [];
  override addInformer(informer: ManagedInformer): void {
    this.informersToStart.push(informer);
    super.addInformer(informer);
  }
  override addController(controller: Controller): void {
    this.controllersToStart.push(controller);
    super.addController(controller);
  }
}
