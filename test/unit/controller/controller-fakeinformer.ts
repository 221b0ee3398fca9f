// An in-memory informer for controller and manager tests: the test drives events and sync by hand.
import type { EventHandler } from "../../../src/controller/controller.ts";

export class FakeInformer<T> {
  readonly handlers: EventHandler<T>[] = [];
  startedWith: AbortSignal | undefined;
  private synced = false;
  private syncWaiters: (() => void)[] = [];

  addEventHandler(handler: EventHandler<T>): void {
    this.handlers.push(handler);
  }

  start(signal: AbortSignal): void {
    this.startedWith = signal;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.syncWaiters.push(resolve);
      signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
  }

  markSynced(): void {
    this.synced = true;
    for (const resolve of this.syncWaiters.splice(0)) resolve();
  }

  add(obj: T): void {
    for (const handler of this.handlers) handler.onAdd?.(obj);
  }

  update(oldObj: T, newObj: T): void {
    for (const handler of this.handlers) handler.onUpdate?.(oldObj, newObj);
  }

  delete(obj: T): void {
    for (const handler of this.handlers) handler.onDelete?.(obj);
  }
}

/** Lets pending promise callbacks and I/O callbacks run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
