// JSON-valued annotations the operator keeps on its objects (the reclaim record, the rebuild
// history). A value nobody wrote reads as the empty value; one that does not parse, or parses to the
// wrong shape, reads as empty too with a warning, so a corrupt annotation never stops a pass and the
// next write replaces it.

export interface Decoded<T> {
  value: T;
  /** Set when the annotation was unreadable and read as empty; the caller logs it at warn. */
  warning?: string;
}

/**
 * Reads annotation `name`: missing, "" and `null` give `empty()`; otherwise `decode` turns the parsed
 * JSON into a value, or returns a string saying why it cannot (read as empty, with that warning).
 */
export function decodeJsonAnnotation<T>(
  name: string,
  raw: string | undefined,
  empty: () => T,
  decode: (parsed: unknown) => T | string,
): Decoded<T> {
  if (raw === undefined || raw === "") return { value: empty() };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    return { value: empty(), warning: `${name} is not JSON, read as empty: ${(err as Error).message}` };
  }
  if (parsed === null) return { value: empty() };
  const decoded = decode(parsed);
  return typeof decoded === "string"
    ? { value: empty(), warning: `${name} ${decoded}, read as empty` }
    : { value: decoded };
}
