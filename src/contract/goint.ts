// Go's strconv integer parsing, which several annotation readers mirror: an optional sign, decimal
// digits only (leading zeros allowed), and an error on overflow of the bit size.

/** strconv.ParseInt(s, 10, bits); undefined wherever Go returns an error. */
export function parseGoInt(s: string, bits: 32 | 64): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = BigInt(s);
  return BigInt.asIntN(bits, n) === n ? n : undefined;
}

/** strconv.ParseInt(s, 10, bits) as a number; undefined on error. */
export function parseGoIntNumber(s: string, bits: 32 | 64): number | undefined {
  const n = parseGoInt(s, bits);
  return n === undefined ? undefined : Number(n);
}
