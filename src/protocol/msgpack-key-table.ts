// Matching known msgpack strings (map keys, type tags, enum values) by their bytes, so decoders
// dispatch on keys without allocating a JS string per key.

/** Known strings (map keys, tags) matched straight from the bytes, with no string allocation. */
export class KeyTable {
  private readonly byLength: ({ bytes: Uint8Array; id: number }[] | undefined)[] = [];
  constructor(readonly names: readonly string[]) {
    const enc = new TextEncoder();
    names.forEach((name, id) => {
      const bytes = enc.encode(name);
      (this.byLength[bytes.length] ??= []).push({ bytes, id });
    });
  }
  /** Id of the key stored at bytes[start, start+len), or -1. */
  find(bytes: Uint8Array, start: number, len: number): number {
    const candidates = this.byLength[len];
    if (candidates === undefined) return -1;
    outer: for (const c of candidates) {
      for (let i = 0; i < len; i++) if (bytes[start + i] !== c.bytes[i]) continue outer;
      return c.id;
    }
    return -1;
  }
}
