// A deep copy of API objects as decoded JSON holds them: plain objects, arrays, strings, numbers,
// booleans and null (what Go's generated DeepCopy does for the typed structs). structuredClone copies
// the same data through the serializer, at ~20 µs an object whatever its size; this takes 1–3 µs for a
// pod, and the CocoonSet reconciler copies the set and every pod of it on each pass.

/** A copy sharing nothing with `value`; own properties keep their order, undefined ones included. */
export function deepCopyJson<T>(value: T): T {
  return copyValue(value) as T;
}

function copyValue(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const copy: unknown[] = value.slice();
    for (let i = 0; i < copy.length; i++) {
      const item = copy[i];
      if (item !== null && typeof item === "object") copy[i] = copyValue(item);
    }
    return copy;
  }
  // A spread copies an object's own properties in one step (V8 clones its shape); nested objects are
  // then replaced by their copies.
  const copy: Record<string, unknown> = { ...value };
  for (const key in copy) {
    const child = copy[key];
    if (child === null || typeof child !== "object") continue;
    // JSON.parse makes "__proto__" an own property; assigning it would set the copy's prototype.
    if (key === "__proto__") {
      Object.defineProperty(copy, key, {
        value: copyValue(child),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else {
      copy[key] = copyValue(child);
    }
  }
  return copy;
}
