// Growing a typed array (tiers allocate storage as blocks are used, not up front): a copy of `a`
// at the longer length `len`, of the same element type.

type GrowableArray = Int32Array | Uint32Array | Uint8Array | Float64Array | BigUint64Array;

export function grown<T extends GrowableArray>(a: T, len: number): T {
  const b = new (a.constructor as new (length: number) => T)(len);
  b.set(a as never);
  return b;
}
