// The mains step 7 put their set in Failed for, in this process, until the main is Ready again. Step 7
// clears a refused hibernate request before it writes Failed, so vk-cocoon can lift the failure and
// report the main Ready before the set's cache shows that Failed: the pass that sees the main Ready
// then reads the phase from before it, and the recovery would go unreported. One instance per
// controller, shared by its passes; a restart starts empty and reads the phase from a fresh list.

export class FailedMains {
  /** The failed main's pod uid, by set (`<namespace>/<name>`). */
  readonly #failed = new Map<string, string>();

  mark(setKey: string, podUid: string): void {
    this.#failed.set(setKey, podUid);
  }

  /** Whether this process put the set in Failed for this very pod (a replacement is another story). */
  marked(setKey: string, podUid: string): boolean {
    return this.#failed.get(setKey) === podUid;
  }

  forget(setKey: string): void {
    this.#failed.delete(setKey);
  }
}
