// One copy of each repeated string in the cache. JSON.parse gives every pod its own copy of the
// namespace, the image, the toleration keys, the QoS class and so on (V8 shares property names, not
// values); with 10k pods those copies are ~0.4 KiB a pod. The table is bounded: when it is full it
// starts over, so values that never repeat (uids, IPs) cannot grow it, and a repeated value costs at
// most one extra copy per restart.

const MAX_ENTRIES = 8192;
let canonical = new Map<string, string>();

export function intern(value: string): string {
  const known = canonical.get(value);
  if (known !== undefined) return known;
  if (canonical.size >= MAX_ENTRIES) canonical = new Map();
  canonical.set(value, value);
  return value;
}

/** Replaces, in place, every string value under `value` (not property names) with its interned copy. */
export function internStrings<T>(value: T): T {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = internValue(value[i]);
  } else if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    for (const key in record) record[key] = internValue(record[key]);
  }
  return value;
}

function internValue(value: unknown): unknown {
  return typeof value === "string" ? intern(value) : internStrings(value);
}
