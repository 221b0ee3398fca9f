// Go's time.ParseDuration and Duration.String, to the nanosecond: the suspend-after-idle annotation
// takes a Go duration, so "1h30m", "1.5h", "300ms", "1µs" and "-0" mean here exactly what
// they mean to a Go program, and an event names a duration the way Go prints it. Integer arithmetic
// is BigInt (Go's uint64); the one float64 step of Go (a fraction times its unit) is a JS number.

const NANOSECOND = 1n;
const MICROSECOND = 1000n * NANOSECOND;
const MILLISECOND = 1000n * MICROSECOND;
const SECOND = 1000n * MILLISECOND;
const MINUTE = 60n * SECOND;
const HOUR = 60n * MINUTE;

const UNITS: ReadonlyMap<string, bigint> = new Map([
  ["ns", NANOSECOND],
  ["us", MICROSECOND],
  ["\u00b5s", MICROSECOND], // micro sign
  ["\u03bcs", MICROSECOND], // Greek small letter mu
  ["ms", MILLISECOND],
  ["s", SECOND],
  ["m", MINUTE],
  ["h", HOUR],
]);

const TWO_TO_63 = 1n << 63n;

export type DurationParse = { ok: true; ns: bigint } | { ok: false; error: string };

function failure(reason: string, orig: string): DurationParse {
  return { ok: false, error: `time: ${reason} ${JSON.stringify(orig)}` };
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= "0" && c <= "9";
}

/** time.ParseDuration: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or "0"; the result in nanoseconds. */
export function parseGoDuration(orig: string): DurationParse {
  let s = orig;
  let neg = false;
  if (s[0] === "-" || s[0] === "+") {
    neg = s[0] === "-";
    s = s.slice(1);
  }
  if (s === "0") return { ok: true, ns: 0n };
  if (s === "") return failure("invalid duration", orig);
  let d = 0n;
  while (s !== "") {
    if (!(s[0] === "." || isDigit(s[0]))) return failure("invalid duration", orig);
    // Consume [0-9]*, as leadingInt: more than 2^63 is an overflow.
    let i = 0;
    let v = 0n;
    for (; isDigit(s[i]); i++) {
      if (v > TWO_TO_63 / 10n) return failure("invalid duration", orig);
      v = v * 10n + BigInt(s.charCodeAt(i) - 48);
      if (v > TWO_TO_63) return failure("invalid duration", orig);
    }
    const pre = i > 0;
    s = s.slice(i);
    // Consume (\.[0-9]*)?, as leadingFraction: digits past what fits are dropped, not an error.
    let post = false;
    let f = 0n;
    let scale = 1;
    if (s[0] === ".") {
      s = s.slice(1);
      let overflow = false;
      let j = 0;
      for (; isDigit(s[j]); j++) {
        if (overflow) continue;
        if (f > (TWO_TO_63 - 1n) / 10n) {
          overflow = true;
          continue;
        }
        const y = f * 10n + BigInt(s.charCodeAt(j) - 48);
        if (y > TWO_TO_63) {
          overflow = true;
          continue;
        }
        f = y;
        scale *= 10;
      }
      post = j > 0;
      s = s.slice(j);
    }
    if (!pre && !post) return failure("invalid duration", orig);
    let k = 0;
    while (k < s.length && s[k] !== "." && !isDigit(s[k])) k++;
    if (k === 0) return failure("missing unit in duration", orig);
    const u = s.slice(0, k);
    s = s.slice(k);
    const unit = UNITS.get(u);
    if (unit === undefined) return failure(`unknown unit ${JSON.stringify(u)} in duration`, orig);
    if (v > TWO_TO_63 / unit) return failure("invalid duration", orig);
    v *= unit;
    if (f > 0n) {
      // Go: uint64(float64(f) * (float64(unit) / scale)), truncated toward zero.
      v += BigInt(Math.trunc(Number(f) * (Number(unit) / scale)));
      if (v > TWO_TO_63) return failure("invalid duration", orig);
    }
    d += v;
    if (d > TWO_TO_63) return failure("invalid duration", orig);
  }
  if (neg) return { ok: true, ns: -d };
  if (d > TWO_TO_63 - 1n) return failure("invalid duration", orig);
  return { ok: true, ns: d };
}

/** Duration.String: "1h30m0s", "1.5s", "300ms", "0s". */
export function formatGoDuration(ns: bigint): string {
  const neg = ns < 0n;
  let u = neg ? -ns : ns;
  let out: string;
  if (u < SECOND) {
    if (u === 0n) return "0s";
    let prec: number;
    let unit: string;
    if (u < MICROSECOND) {
      prec = 0;
      unit = "ns";
    } else if (u < MILLISECOND) {
      prec = 3;
      unit = "\u00b5s";
    } else {
      prec = 6;
      unit = "ms";
    }
    const [frac, whole] = formatFraction(u, prec);
    out = `${whole}${frac}${unit}`;
  } else {
    const [frac, seconds] = formatFraction(u, 9);
    u = seconds;
    out = `${u % 60n}${frac}s`;
    u /= 60n;
    if (u > 0n) {
      out = `${u % 60n}m${out}`;
      u /= 60n;
      if (u > 0n) out = `${u}h${out}`;
    }
  }
  return neg ? `-${out}` : out;
}

/** fmtFrac: the fraction of v/10^prec without trailing zeros (no point when zero), and the rest. */
function formatFraction(v: bigint, prec: number): [string, bigint] {
  let digits = "";
  let print = false;
  let rest = v;
  for (let i = 0; i < prec; i++) {
    const digit = rest % 10n;
    print ||= digit !== 0n;
    if (print) digits = `${digit}${digits}`;
    rest /= 10n;
  }
  return [print ? `.${digits}` : "", rest];
}

/** Nanoseconds to milliseconds, the unit of the operator's clock. */
export function nsToMs(ns: bigint): number {
  return Number(ns) / 1e6;
}

/** Milliseconds (the clock's unit) to nanoseconds, for formatGoDuration. */
export function msToNs(ms: number): bigint {
  return BigInt(Math.round(ms)) * MILLISECOND;
}
