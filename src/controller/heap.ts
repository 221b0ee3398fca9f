// A binary min-heap over a strict "comes first" relation, for the work queue's ready and delayed items.

export class MinHeap<E> {
  private readonly items: E[] = [];
  private readonly first: (a: E, b: E) => boolean;

  constructor(first: (a: E, b: E) => boolean) {
    this.first = first;
  }

  get size(): number {
    return this.items.length;
  }

  peek(): E | undefined {
    return this.items[0];
  }

  push(entry: E): void {
    const items = this.items;
    items.push(entry);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.first(items[i]!, items[parent]!)) break;
      [items[parent], items[i]] = [items[i]!, items[parent]!];
      i = parent;
    }
  }

  pop(): E | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (last === undefined || items.length === 0) return top;
    items[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < items.length && this.first(items[left]!, items[smallest]!)) smallest = left;
      if (right < items.length && this.first(items[right]!, items[smallest]!)) smallest = right;
      if (smallest === i) return top;
      [items[smallest], items[i]] = [items[i]!, items[smallest]!];
      i = smallest;
    }
  }
}
