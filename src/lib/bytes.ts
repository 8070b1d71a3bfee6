// Byte helpers: joining chunks into one Uint8Array (wire encoders, request bodies, worker
// responses) and prefix tests (topic filters).

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

/** Whether `bytes` begins with `prefix` (a SUB's topic filter, applied again on the receiving side). */
export function startsWithBytes(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (prefix.length > bytes.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}
