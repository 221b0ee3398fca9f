// Generated names: `<prefix>-<5 characters>` as the API server's generateName makes them (its
// alphabet has no vowels and no look-alike characters), drawn here so the creator knows the name
// before the create and can expect it in its cache.

import { randomBytes } from "node:crypto";

const SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

export function generatedName(prefix: string): string {
  return `${prefix}-${[...randomBytes(5)].map((byte) => SUFFIX_ALPHABET[byte % SUFFIX_ALPHABET.length]).join("")}`;
}
