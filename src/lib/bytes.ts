// Joining byte chunks into one Uint8Array (wire encoders, request bodies, worker responses).

/** The parts back to back in a new array; `size` (their total length) when the caller counted it already. */
export function concatBytes(parts: readonly Uint8Array[], size?: number): Uint8Array {
  let total = size ?? 0;
  if (size === undefined) for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
