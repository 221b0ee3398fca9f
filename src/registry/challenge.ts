// WWW-Authenticate parsing: `Bearer realm="…",service="…",scope="…"` or `Basic realm="…"`.

export interface Challenge {
  scheme: "basic" | "bearer";
  params: Record<string, string>;
}

/** The first Basic or Bearer challenge in the header, or undefined when there is none. */
export function parseChallenge(header: string | null): Challenge | undefined {
  if (!header) return undefined;
  const match = /^\s*(\w+)\s*(.*)$/s.exec(header);
  if (!match) return undefined;
  const scheme = (match[1] ?? "").toLowerCase();
  if (scheme !== "basic" && scheme !== "bearer") return undefined;
  const params: Record<string, string> = {};
  const paramRe = /([\w-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))\s*,?\s*/g;
  for (const m of (match[2] ?? "").matchAll(paramRe)) {
    const key = (m[1] ?? "").toLowerCase();
    params[key] = m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : (m[3] ?? "");
  }
  return { scheme, params };
}
