// RFC 3339 timestamps as the Go side writes and reads them: metav1.Time and MicroTime on the wire
// (condition and event times, Lease renewals), annotations the operator stamps (suspending-since,
// parked-at, idle deadlines, checkpoint times) and those users or the plugin write.

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|([+-])(\d{2}):(\d{2}))$/;

/**
 * Epoch milliseconds of an RFC 3339 date-time ("2026-01-01T10:00:00Z", "…T10:00:00.5+02:00"), or
 * undefined for anything Go's time.Parse(time.RFC3339, …) refuses: other layouts, and fields out of
 * range (2026-02-31, 24:00:00, an offset of 24 hours). Fractions finer than a millisecond are dropped,
 * as the clock counts milliseconds.
 */
export function parseRFC3339(text: string | undefined): number | undefined {
  const m = text === undefined ? null : RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (m[8] !== "Z") {
    const offsetHours = Number(m[10]);
    const offsetRest = Number(m[11]);
    if (offsetHours > 23 || offsetRest > 59) return undefined;
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetRest);
  }
  const fractionMs = Number((m[7] ?? "").padEnd(3, "0").slice(0, 3));
  return Date.UTC(year, month - 1, day, hour, minute, second) + fractionMs - offsetMinutes * 60_000;
}

/** Go's time.RFC3339 in UTC: whole seconds, `Z` (metav1.Time on the wire). */
export function formatRFC3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Go's time.RFC3339Nano in UTC, as encoding/json writes a time.Time: trailing fraction zeros dropped. */
export function formatRFC3339Nano(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, (_, fraction: string) => {
    const trimmed = fraction.replace(/0+$/, "");
    return trimmed ? `.${trimmed}Z` : "Z";
  });
}

/** metav1.MicroTime on the wire: RFC 3339 with exactly 6 fractional digits. */
export function formatMicroTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}
