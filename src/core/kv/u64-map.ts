// Open-addressing hash map from 64-bit block hashes to int32 values ≥ 0, keyed by the hash's two
// 32-bit words so hot paths never box a bigint: a JS Map<bigint, …> hashes a heap bigint per
// call and costs ~1 µs per operation at a full trace's millions of block stores and removals.
// Linear probing at ≤ 1/2 load with backward-shift deletion (no tombstones); storage grows
// with use: 12 bytes per bucket, about 24-48 per entry, against ~80 for a Map<bigint, number>.

/** A free bucket's value word: values are stored + 1, so a fresh zeroed table is all free. */
const EMPTY = 0;
const MIN_CAPACITY = 16;

// Shared scratch to split a bigint into its words without allocating (see splitU64).
const scratch64 = new BigUint64Array(1);
/**
 * The two 32-bit words of the last bigint passed to splitU64, in platform order (the same order
 * in which a Uint32Array view of a BigUint64Array sees them). Read them before the next split.
 */
export const SPLIT = new Uint32Array(scratch64.buffer);

// Stores go through a DataView: JSC stores a bigint into a BigUint64Array element about 2.5× slower
// than DataView.setBigUint64 (bench/agent-ingest.ts splits one raw hash per block op). The
// DataView writes in platform byte order, so SPLIT sees the words as the typed-array view would.
const scratchView = new DataView(scratch64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Writes `hash` (mod 2^64) into SPLIT[0], SPLIT[1]. */
export function splitU64(hash: bigint): void {
  scratchView.setBigUint64(0, hash, LITTLE_ENDIAN); // ToBigUint64: wraps mod 2^64 like the typed array
}

/** A Uint32Array over the words of `a` (2 per element, platform order): no copy. */
export function wordsOf(a: BigUint64Array): Uint32Array {
  return new Uint32Array(a.buffer, a.byteOffset, a.length * 2);
}

export class U64Map {
  /**
   * Buckets of three int32: the key's two words then value + 1, interleaved so a probe touches
   * one cache line (a full G1 map is ~400 kB: lookups are cache misses, not arithmetic). Words
   * arrive as u32 (from Uint32Array views) and are kept as int32 (`| 0`) so every comparison
   * stays an int32 one for the JIT.
   */
  private table!: Int32Array;
  private mask = 0;
  private shift = 0;
  size = 0;

  constructor(expected = 0) {
    this.alloc(capacityFor(expected));
  }

  /** Value stored for the key (w0, w1), or -1. */
  get(w0: number, w1: number): number {
    const i = this.find(w0 | 0, w1 | 0);
    return i === -1 ? -1 : this.table[3 * i + 2]! - 1;
  }

  has(w0: number, w1: number): boolean {
    return this.find(w0 | 0, w1 | 0) !== -1;
  }

  /** Stores `value` (0 ≤ value < 2^31 − 1) unless the key is present; true when it was inserted. */
  setIfAbsent(w0: number, w1: number, value: number): boolean {
    return this.getOrInsert(w0, w1, value) === -1;
  }

  /** The key's value when present; otherwise inserts `value` and returns -1. One probe run. */
  getOrInsert(w0: number, w1: number, value: number): number {
    const i = this.cell(w0 | 0, w1 | 0);
    const b = 3 * i;
    if (this.table[b + 2] !== EMPTY) return this.table[b + 2]! - 1;
    this.table[b + 2] = value + 1;
    return -1;
  }

  /** Stores `value` (as setIfAbsent) for the key, replacing any previous value. One probe run. */
  set(w0: number, w1: number, value: number): void {
    const i = this.cell(w0 | 0, w1 | 0); // first: a claim may replace the table
    this.table[3 * i + 2] = value + 1;
  }

  /** Adds 1 to the key's value (inserting 1 when absent); returns the new value. One probe run. */
  increment(w0: number, w1: number): number {
    const b = 3 * this.cell(w0 | 0, w1 | 0);
    const t = this.table;
    t[b + 2] = t[b + 2] === EMPTY ? 2 : t[b + 2]! + 1;
    return t[b + 2]! - 1;
  }

  /**
   * The bucket of the key, claimed (key written, value EMPTY, counted) when it was absent: the
   * caller writes the value. The table grows only for a claim (a present key never moves).
   */
  private cell(w0: number, w1: number): number {
    for (;;) {
      const t = this.table;
      const mask = this.mask;
      let i = this.home(w0, w1);
      for (;;) {
        const b = 3 * i;
        if (t[b + 2] === EMPTY) break;
        if (t[b] === w0 && t[b + 1] === w1) return i;
        i = (i + 1) & mask;
      }
      if ((this.size + 1) * 2 > mask + 1) {
        this.rehash((mask + 1) * 2);
        continue;
      }
      t[3 * i] = w0;
      t[3 * i + 1] = w1;
      this.size++;
      return i;
    }
  }

  /** Removes the key; returns its value, or -1 when absent. */
  delete(w0: number, w1: number): number {
    const i = this.find(w0 | 0, w1 | 0);
    if (i === -1) return -1;
    const removed = this.table[3 * i + 2]! - 1;
    this.deleteAt(i);
    return removed;
  }

  /** Takes 1 from the key's value, removing the key at 0; returns the new value (-1 when absent). */
  decrement(w0: number, w1: number): number {
    const i = this.find(w0 | 0, w1 | 0);
    if (i === -1) return -1;
    const v = this.table[3 * i + 2]! - 2;
    if (v > 0) this.table[3 * i + 2] = v + 1;
    else this.deleteAt(i);
    return Math.max(v, 0);
  }

  private deleteAt(i: number): void {
    const t = this.table;
    const mask = this.mask;
    // Backward shift: pull later entries of the probe run into the hole when their home bucket
    // does not lie cyclically in (hole, their position], so every lookup still finds them.
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const bj = 3 * j;
      if (t[bj + 2] === EMPTY) break;
      const h = this.home(t[bj]!, t[bj + 1]!);
      if (i <= j ? i < h && h <= j : i < h || h <= j) continue;
      const bi = 3 * i;
      t[bi] = t[bj]!;
      t[bi + 1] = t[bj + 1]!;
      t[bi + 2] = t[bj + 2]!;
      i = j;
    }
    t[3 * i + 2] = EMPTY;
    this.size--;
  }

  getBig(hash: bigint): number {
    splitU64(hash);
    return this.get(SPLIT[0]!, SPLIT[1]!);
  }

  hasBig(hash: bigint): boolean {
    splitU64(hash);
    return this.find(SPLIT[0]! | 0, SPLIT[1]! | 0) !== -1;
  }

  setIfAbsentBig(hash: bigint, value: number): boolean {
    splitU64(hash);
    return this.setIfAbsent(SPLIT[0]!, SPLIT[1]!, value);
  }

  deleteBig(hash: bigint): number {
    splitU64(hash);
    return this.delete(SPLIT[0]!, SPLIT[1]!);
  }

  /** Forgets every key and gives the storage back. */
  clear(): void {
    this.alloc(MIN_CAPACITY);
  }

  /** Calls `fn` for every entry, in bucket order (unspecified; inspection and clears). */
  forEach(fn: (hash: bigint, value: number) => void): void {
    const t = this.table;
    for (let b = 0; b < t.length; b += 3) {
      if (t[b + 2] === EMPTY) continue;
      SPLIT[0] = t[b]! >>> 0;
      SPLIT[1] = t[b + 1]! >>> 0;
      fn(scratch64[0]!, t[b + 2]! - 1);
    }
  }

  /** Every key as its two u32 words, with its value (no bigint per key). */
  forEachWords(fn: (w0: number, w1: number, value: number) => void): void {
    const t = this.table;
    for (let b = 0; b < t.length; b += 3) {
      if (t[b + 2] === EMPTY) continue;
      fn(t[b]! >>> 0, t[b + 1]! >>> 0, t[b + 2]! - 1);
    }
  }

  /** Every key as a bigint (inspection and tests). */
  keyList(): bigint[] {
    const out: bigint[] = [];
    this.forEach((h) => out.push(h));
    return out;
  }

  private find(w0: number, w1: number): number {
    const t = this.table;
    const mask = this.mask;
    let i = this.home(w0, w1);
    for (;;) {
      const b = 3 * i;
      if (t[b + 2] === EMPTY) return -1;
      if (t[b] === w0 && t[b + 1] === w1) return i;
      i = (i + 1) & mask;
    }
  }

  /** Fibonacci hashing of both words (block hashes are uniform, test keys are often 1, 2, 3…). */
  private home(w0: number, w1: number): number {
    return Math.imul(w0 ^ Math.imul(w1 ^ (w1 >>> 15), 0x85ebca6b), 0x9e3779b1) >>> this.shift;
  }

  private alloc(capacity: number): void {
    this.table = new Int32Array(3 * capacity);
    this.mask = capacity - 1;
    this.shift = 32 - Math.log2(capacity);
    this.size = 0;
  }

  private rehash(capacity: number): void {
    const old = this.table;
    this.alloc(capacity);
    for (let b = 0; b < old.length; b += 3) if (old[b + 2] !== EMPTY) this.setIfAbsent(old[b]!, old[b + 1]!, old[b + 2]! - 1);
  }
}

/** Smallest power of two ≥ MIN_CAPACITY holding `n` entries at ≤ 1/2 load (short probe runs). */
function capacityFor(n: number): number {
  let c = MIN_CAPACITY;
  while (n * 2 > c) c *= 2;
  return c;
}
