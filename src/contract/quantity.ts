// Kubernetes resource quantities, parsed and printed exactly as apimachinery's resource.Quantity
// (ParseQuantity + String()). The storage annotation carries the canonical string and the Go
// operator compares it byte for byte, so every quirk of the Go code is reproduced here: a short
// input already in canonical-looking form is echoed verbatim (Go caches the input string), values
// are rounded up to nano precision, and binary values that are not whole fall back to decimal SI.

import { parseGoInt } from "./goint.ts";

export type QuantityFormat = "DecimalSI" | "BinarySI" | "DecimalExponent";

/** An exact quantity: unscaled × 10^exponent. */
export interface ParsedQuantity {
  unscaled: bigint;
  exponent: number;
  format: QuantityFormat;
  /** The input string, when Go would print it back unchanged. */
  verbatim?: string;
}

export class QuantityError extends Error {
  constructor(input: string, reason: string) {
    super(`invalid quantity ${JSON.stringify(input)}: ${reason}`);
    this.name = "QuantityError";
  }
}

const FORMAT_WRONG =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const SUFFIX_CHARS = "eEinumkKMGTP";
const MAX_INT64 = (1n << 63n) - 1n;
const NANO = -9;
// Go's maxInt64Factors: the most decimal digits the int64 fast path accepts.
const MAX_INT64_DIGITS = 18;

const DECIMAL_SUFFIXES: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  "": 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY_SUFFIXES: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL_SUFFIX_BY_EXPONENT = new Map(Object.entries(DECIMAL_SUFFIXES).map(([s, e]) => [e, s]));
const BINARY_SUFFIX_BY_POWER = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= "0" && c <= "9";
}

interface SplitQuantity {
  positive: boolean;
  /** Sign, digits and fraction as written (Go's `value`). */
  value: string;
  num: string;
  denom: string;
  suffix: string;
}

/** Go's parseQuantityString: a hand-written scanner, looser than its own documented regex. */
function splitQuantity(str: string): SplitQuantity {
  let positive = true;
  let pos = 0;
  const end = str.length;
  if (str[0] === "-") {
    positive = false;
    pos++;
  } else if (str[0] === "+") {
    pos++;
  }
  while (pos < end && str[pos] === "0") pos++;
  if (pos >= end) return { positive, value: "0", num: "0", denom: "", suffix: "" };

  const numStart = pos;
  while (pos < end && isDigit(str[pos])) pos++;
  if (pos >= end) return { positive, value: str, num: str.slice(numStart), denom: "", suffix: "" };
  const num = pos > numStart ? str.slice(numStart, pos) : "0";

  let denom = "";
  if (str[pos] === ".") {
    pos++;
    const denomStart = pos;
    while (pos < end && isDigit(str[pos])) pos++;
    denom = str.slice(denomStart, pos);
    if (pos >= end) return { positive, value: str, num, denom, suffix: "" };
  }
  const value = str.slice(0, pos);

  const suffixStart = pos;
  while (pos < end && SUFFIX_CHARS.includes(str[pos] as string)) pos++;
  if (pos < end && (str[pos] === "-" || str[pos] === "+")) pos++;
  while (pos < end && isDigit(str[pos])) pos++;
  if (pos < end) throw new QuantityError(str, FORMAT_WRONG);
  return { positive, value, num, denom, suffix: str.slice(suffixStart) };
}

interface SuffixMeaning {
  base: 2 | 10;
  exponent: number;
  format: QuantityFormat;
}

function interpretSuffix(input: string, suffix: string): SuffixMeaning {
  const decimal = DECIMAL_SUFFIXES[suffix];
  if (decimal !== undefined) return { base: 10, exponent: decimal, format: "DecimalSI" };
  const binary = BINARY_SUFFIXES[suffix];
  if (binary !== undefined) return { base: 2, exponent: binary, format: "BinarySI" };
  if (suffix.length > 1 && (suffix[0] === "e" || suffix[0] === "E")) {
    const parsed = parseGoInt(suffix.slice(1), 64);
    // Go narrows the exponent with int32(parsed).
    if (parsed !== undefined)
      return { base: 10, exponent: Number(BigInt.asIntN(32, parsed)), format: "DecimalExponent" };
  }
  throw new QuantityError(input, "unable to parse quantity's suffix");
}

/** The int64 fast path of Go's ParseQuantity; undefined when Go falls through to the slow path. */
function parseFast(str: string, split: SplitQuantity, meaning: SuffixMeaning): ParsedQuantity | undefined {
  const { num, denom, positive } = split;
  let scale = 0;
  let precision: number;
  let mantissa = 1n;
  if (meaning.format === "BinarySI") {
    if (denom.length > 0) return undefined;
    mantissa = 1n << BigInt(meaning.exponent);
    precision = 15 - num.length - Math.trunc((meaning.exponent * 3) / 10) - 1;
  } else {
    scale = meaning.exponent;
    precision = MAX_INT64_DIGITS - (num.length + denom.length);
  }
  if (precision < 0) return undefined;
  scale -= denom.length;
  if (scale < NANO) return undefined;

  const shifted = num + denom;
  const value = BigInt(shifted);
  const magnitude = value * mantissa;
  if (magnitude > MAX_INT64) return undefined;
  const unscaled = positive ? magnitude : -magnitude;

  const looksCanonical =
    meaning.format === "BinarySI"
      ? (value & 7n) !== 0n
      : scale % 3 === 0 && !shifted.endsWith("000") && shifted[0] !== "0";
  const parsed: ParsedQuantity = { unscaled, exponent: scale, format: meaning.format };
  if (looksCanonical) parsed.verbatim = str;
  return parsed;
}

/** Go's inf.Dec SetString for the `value` part: optional sign, digits, optional fraction. */
function parseDecimal(input: string, value: string): { unscaled: bigint; exponent: number } {
  const match = /^([+-]?)([0-9]*)(?:\.([0-9]*))?$/.exec(value);
  const whole = match?.[2] ?? "";
  const fraction = match?.[3] ?? "";
  if (!match || whole.length + fraction.length === 0) {
    throw new QuantityError(input, "unable to parse numeric part of quantity");
  }
  const magnitude = BigInt(whole + fraction);
  return { unscaled: match[1] === "-" ? -magnitude : magnitude, exponent: -fraction.length };
}

/** The arbitrary-precision slow path of Go's ParseQuantity. */
function parseSlow(str: string, split: SplitQuantity, meaning: SuffixMeaning): ParsedQuantity {
  let { unscaled, exponent } = parseDecimal(str, split.value);
  if (meaning.base === 10) exponent += meaning.exponent;
  else unscaled *= 1n << BigInt(meaning.exponent);

  const negative = unscaled < 0n;
  let magnitude = negative ? -unscaled : unscaled;
  // Round up (away from zero) to nano precision.
  if (magnitude !== 0n && exponent < NANO) {
    const shift = NANO - exponent;
    const digits = magnitude.toString().length;
    if (shift > digits) {
      magnitude = 1n;
    } else {
      const divisor = 10n ** BigInt(shift);
      const quotient = magnitude / divisor;
      magnitude = magnitude % divisor === 0n ? quotient : quotient + 1n;
    }
    exponent = NANO;
  }
  let format = meaning.format;
  if (format === "BinarySI") {
    if (compareMagnitude(magnitude, exponent, MAX_INT64) > 0) {
      magnitude = MAX_INT64;
      exponent = 0;
    }
    if (magnitude !== 0n && compareMagnitude(magnitude, exponent, 1n) < 0) format = "DecimalSI";
  }
  return { unscaled: negative ? -magnitude : magnitude, exponent, format };
}

/** Compares unscaled × 10^exponent with an integer. */
function compareMagnitude(unscaled: bigint, exponent: number, integer: bigint): number {
  const left = exponent >= 0 ? unscaled * 10n ** BigInt(exponent) : unscaled;
  const right = exponent >= 0 ? integer : integer * 10n ** BigInt(-exponent);
  return left === right ? 0 : left < right ? -1 : 1;
}

/** Parses a quantity as Go's resource.ParseQuantity does; throws QuantityError when Go errors. */
export function parseQuantity(input: string | number): ParsedQuantity {
  const str = (typeof input === "number" ? String(input) : input).trim();
  if (str.length === 0) throw new QuantityError(str, FORMAT_WRONG);
  if (str === "0") return { unscaled: 0n, exponent: 0, format: "DecimalSI", verbatim: "0" };
  const split = splitQuantity(str);
  const meaning = interpretSuffix(str, split.suffix);
  return parseFast(str, split, meaning) ?? parseSlow(str, split, meaning);
}

function removeFactors(value: bigint, factor: bigint): { value: bigint; times: number } {
  let times = 0;
  while (value !== 0n && value % factor === 0n) {
    value /= factor;
    times++;
  }
  return { value, times };
}

function formatDecimal(unscaled: bigint, exponent: number, format: QuantityFormat): string {
  const reduced = removeFactors(unscaled, 10n);
  let mantissa = reduced.value;
  let power = exponent + reduced.times;
  while (power % 3 !== 0) {
    mantissa *= 10n;
    power--;
  }
  if (format === "DecimalExponent") return power === 0 ? `${mantissa}` : `${mantissa}e${power}`;
  // Go prints no suffix at all for a decimal power it has no name for (e.g. 10^21).
  return `${mantissa}${DECIMAL_SUFFIX_BY_EXPONENT.get(power) ?? ""}`;
}

/** Go's Quantity.String(). */
export function formatQuantity(q: ParsedQuantity): string {
  if (q.verbatim !== undefined) return q.verbatim;
  if (q.unscaled === 0n) return "0";
  if (q.format !== "BinarySI") return formatDecimal(q.unscaled, q.exponent, q.format);

  const magnitude = q.unscaled < 0n ? -q.unscaled : q.unscaled;
  if (compareMagnitude(magnitude, q.exponent, 1024n) < 0)
    return formatDecimal(q.unscaled, q.exponent, "DecimalSI");
  const divisor = q.exponent >= 0 ? 1n : 10n ** BigInt(-q.exponent);
  if (q.exponent < 0 && q.unscaled % divisor !== 0n)
    return formatDecimal(q.unscaled, q.exponent, "DecimalSI");
  const integer = q.exponent >= 0 ? q.unscaled * 10n ** BigInt(q.exponent) : q.unscaled / divisor;
  const reduced = removeFactors(integer, 1024n);
  return `${reduced.value}${BINARY_SUFFIX_BY_POWER[reduced.times] ?? ""}`;
}

/** The canonical string Go's operator writes for a spec quantity (`resource.Quantity.String()`). */
export function canonicalQuantity(value: string | number): string {
  return formatQuantity(parseQuantity(value));
}

/** Compares two quantities by exact value, as Go's Quantity.Cmp. */
export function compareQuantities(a: string | number, b: string | number): number {
  const x = parseQuantity(a);
  const y = parseQuantity(b);
  const exponent = Math.min(x.exponent, y.exponent);
  const left = x.unscaled * 10n ** BigInt(x.exponent - exponent);
  const right = y.unscaled * 10n ** BigInt(y.exponent - exponent);
  return left === right ? 0 : left < right ? -1 : 1;
}

/** The value in thousandths, rounded up (away from zero), as Go's MilliValue for in-range values. */
export function quantityMillis(value: string | number): bigint {
  const q = parseQuantity(value);
  const exponent = q.exponent + 3;
  if (exponent >= 0) return q.unscaled * 10n ** BigInt(exponent);
  const divisor = 10n ** BigInt(-exponent);
  const quotient = q.unscaled / divisor;
  if (q.unscaled % divisor === 0n) return quotient;
  return q.unscaled > 0n ? quotient + 1n : quotient - 1n;
}
