// The cache's in-memory store: objects by "namespace/name", plus generic secondary indexes.

export interface StoredObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** Returns the index values an object files under (none, one or several). */
export type IndexFunc<T> = (obj: T) => string[];

export interface ReplaceDiff<T> {
  added: T[];
  /** [old, new] pairs whose resourceVersion changed. */
  updated: [T, T][];
  /** The last known state of objects the new list no longer has. */
  deleted: T[];
}

/** "namespace/name", or "name" for cluster-scoped objects (client-go's MetaNamespaceKeyFunc). */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function keyOf(obj: StoredObject): string {
  const name = obj.metadata?.name;
  if (!name) throw new Error("object has no metadata.name");
  return objectKey(obj.metadata?.namespace, name);
}

const NAMESPACE_INDEX = "\0namespace";

export class Store<T extends StoredObject> {
  private readonly objects = new Map<string, T>();
  private readonly indexers: Map<string, IndexFunc<T>>;
  /** index name → index value → keys */
  private readonly indices = new Map<string, Map<string, Set<string>>>();

  constructor(indexers: Record<string, IndexFunc<T>> = {}) {
    this.indexers = new Map(Object.entries(indexers));
    this.indexers.set(NAMESPACE_INDEX, (obj) => [obj.metadata?.namespace ?? ""]);
    for (const name of this.indexers.keys()) this.indices.set(name, new Map());
  }

  get size(): number {
    return this.objects.size;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.objects.get(objectKey(namespace, name));
  }

  getByKey(key: string): T | undefined {
    return this.objects.get(key);
  }

  /** Every object, or those of one namespace. */
  list(namespace?: string): T[] {
    if (namespace === undefined) return [...this.objects.values()];
    return this.byIndexName(NAMESPACE_INDEX, namespace);
  }

  byIndex(index: string, value: string): T[] {
    if (!this.indexers.has(index)) throw new Error(`no index named ${index}`);
    return this.byIndexName(index, value);
  }

  /** Inserts or replaces; returns the object it replaced. */
  upsert(obj: T): T | undefined {
    const key = keyOf(obj);
    const old = this.objects.get(key);
    if (old) this.unindex(key, old);
    this.objects.set(key, obj);
    this.index(key, obj);
    return old;
  }

  /** Removes by key; returns the removed object. */
  remove(key: string): T | undefined {
    const old = this.objects.get(key);
    if (!old) return undefined;
    this.unindex(key, old);
    this.objects.delete(key);
    return old;
  }

  /** Replaces the whole content with a fresh list and reports what changed. */
  replace(items: T[]): ReplaceDiff<T> {
    const diff: ReplaceDiff<T> = { added: [], updated: [], deleted: [] };
    const seen = new Set<string>();
    for (const obj of items) {
      const key = keyOf(obj);
      seen.add(key);
      const old = this.upsert(obj);
      if (!old) diff.added.push(obj);
      else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) diff.updated.push([old, obj]);
    }
    for (const key of [...this.objects.keys()]) {
      if (seen.has(key)) continue;
      const old = this.remove(key);
      if (old) diff.deleted.push(old);
    }
    return diff;
  }

  private byIndexName(index: string, value: string): T[] {
    const keys = this.indices.get(index)?.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const key of keys) {
      const obj = this.objects.get(key);
      if (obj) out.push(obj);
    }
    return out;
  }

  private index(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const index = this.indices.get(name)!;
      for (const value of new Set(fn(obj))) {
        let keys = index.get(value);
        if (!keys) {
          keys = new Set();
          index.set(value, keys);
        }
        keys.add(key);
      }
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const index = this.indices.get(name)!;
      for (const value of fn(obj)) {
        const keys = index.get(value);
        if (!keys) continue;
        keys.delete(key);
        if (keys.size === 0) index.delete(value);
      }
    }
  }
}
