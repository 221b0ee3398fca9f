// Serialises the CocoonHibernation passes that touch one VM (docs/hibernation.md, step 5). Two CRs can
// name the same pod (the one-CR-per-pod rule lives in a webhook that may be missing), and with more
// than one worker their opposing desires would race the pod's hibernate annotation and the VM's
// :hibernate tag. Striping bounds the table while VM names come and go; a collision only costs two
// unrelated VMs an occasional wait.

export const VM_LOCK_STRIPES = 64;

/** FNV-1a over the UTF-16 code units; any stable spread will do. */
function stripeOf(key: string, stripes: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % stripes;
}

export class StripedLock {
  /** Per stripe, the promise that settles when the last holder (or waiter) releases. */
  private readonly tails: Promise<void>[];

  constructor(stripes = VM_LOCK_STRIPES) {
    this.tails = Array.from({ length: stripes }, () => Promise.resolve());
  }

  /** Waits for key's stripe, FIFO, and returns its release. */
  async acquire(key: string): Promise<() => void> {
    const stripe = stripeOf(key, this.tails.length);
    const previous = this.tails[stripe] ?? Promise.resolve();
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.tails[stripe] = previous.then(() => held);
    await previous;
    return release;
  }
}
