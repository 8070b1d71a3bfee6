// Open-addressing hash map from 64-bit block hashes to int32 values ≥ 0, keyed by the hash's two
// 32-bit words so hot paths never box a bigint: a JS Map<bigint, …> hashes a heap bigint per
// call and costs ~1 µs per operation at a full trace's millions of block stores and removals.
// Linear probing with backward-shift deletion (no tombstones); storage grows with use.

const EMPTY = -1;
const MIN_CAPACITY = 16;

// Shared scratch to split a bigint into its words without allocating (see splitU64).
const scratch64 = new BigUint64Array(1);
/**
 * The two 32-bit words of the last bigint passed to splitU64, in platform order (the same order
 * in which a Uint32Array view of a BigUint64Array sees them). Read them before the next split.
 */
export const SPLIT = new Uint32Array(scratch64.buffer);

/** Writes `hash` (mod 2^64) into SPLIT[0], SPLIT[1]. */
export function splitU64(hash: bigint): void {
  scratch64[0] = hash;
}

/** A Uint32Array over the words of `a` (2 per element, platform order): no copy. */
export function wordsOf(a: BigUint64Array): Uint32Array {
  return new Uint32Array(a.buffer, a.byteOffset, a.length * 2);
}

export class U64Map {
  /** Keys as u64 and, over the same buffer, as word pairs (w0 at 2i, w1 at 2i + 1). */
  private keys!: BigUint64Array;
  private words!: Uint32Array;
  /** EMPTY marks a free bucket, so stored values must be ≥ 0. */
  private vals!: Int32Array;
  private mask = 0;
  private shift = 0;
  size = 0;

  constructor(expected = 0) {
    this.alloc(capacityFor(expected));
  }

  /** Value stored for the key (w0, w1), or -1. */
  get(w0: number, w1: number): number {
    const i = this.find(w0, w1);
    return i === -1 ? -1 : this.vals[i]!;
  }

  has(w0: number, w1: number): boolean {
    return this.find(w0, w1) !== -1;
  }

  /** Stores `value` (≥ 0) unless the key is present; true when it was inserted. */
  setIfAbsent(w0: number, w1: number, value: number): boolean {
    if ((this.size + 1) * 4 > this.vals.length * 3) this.rehash(this.vals.length * 2);
    const words = this.words;
    const vals = this.vals;
    const mask = this.mask;
    let i = this.home(w0, w1);
    for (;;) {
      if (vals[i] === EMPTY) {
        words[2 * i] = w0;
        words[2 * i + 1] = w1;
        vals[i] = value;
        this.size++;
        return true;
      }
      if (words[2 * i] === w0 && words[2 * i + 1] === w1) return false;
      i = (i + 1) & mask;
    }
  }

  /** Stores `value` (≥ 0) for the key, replacing any previous value. */
  set(w0: number, w1: number, value: number): void {
    const i = this.find(w0, w1);
    if (i === -1) this.setIfAbsent(w0, w1, value);
    else this.vals[i] = value;
  }

  /** Removes the key; returns its value, or -1 when absent. */
  delete(w0: number, w1: number): number {
    let i = this.find(w0, w1);
    if (i === -1) return -1;
    const words = this.words;
    const vals = this.vals;
    const mask = this.mask;
    const removed = vals[i]!;
    // Backward shift: pull later entries of the probe run into the hole when their home bucket
    // does not lie cyclically in (hole, their position], so every lookup still finds them.
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      if (vals[j] === EMPTY) break;
      const h = this.home(words[2 * j]!, words[2 * j + 1]!);
      if (i <= j ? i < h && h <= j : i < h || h <= j) continue;
      words[2 * i] = words[2 * j]!;
      words[2 * i + 1] = words[2 * j + 1]!;
      vals[i] = vals[j]!;
      i = j;
    }
    vals[i] = EMPTY;
    this.size--;
    return removed;
  }

  getBig(hash: bigint): number {
    splitU64(hash);
    return this.get(SPLIT[0]!, SPLIT[1]!);
  }

  hasBig(hash: bigint): boolean {
    splitU64(hash);
    return this.find(SPLIT[0]!, SPLIT[1]!) !== -1;
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
    const vals = this.vals;
    for (let i = 0; i < vals.length; i++) if (vals[i] !== EMPTY) fn(this.keys[i]!, vals[i]!);
  }

  /** Every key as a bigint (inspection and tests). */
  keyList(): bigint[] {
    const out: bigint[] = [];
    this.forEach((h) => out.push(h));
    return out;
  }

  private find(w0: number, w1: number): number {
    const words = this.words;
    const vals = this.vals;
    const mask = this.mask;
    let i = this.home(w0, w1);
    for (;;) {
      if (vals[i] === EMPTY) return -1;
      if (words[2 * i] === w0 && words[2 * i + 1] === w1) return i;
      i = (i + 1) & mask;
    }
  }

  /** Fibonacci hashing of both words (block hashes are uniform, test keys are often 1, 2, 3…). */
  private home(w0: number, w1: number): number {
    return Math.imul(w0 ^ Math.imul(w1 ^ (w1 >>> 15), 0x85ebca6b), 0x9e3779b1) >>> this.shift;
  }

  private alloc(capacity: number): void {
    this.keys = new BigUint64Array(capacity);
    this.words = new Uint32Array(this.keys.buffer);
    this.vals = new Int32Array(capacity).fill(EMPTY);
    this.mask = capacity - 1;
    this.shift = 32 - Math.log2(capacity);
    this.size = 0;
  }

  private rehash(capacity: number): void {
    const words = this.words;
    const vals = this.vals;
    this.alloc(capacity);
    for (let i = 0; i < vals.length; i++) if (vals[i] !== EMPTY) this.setIfAbsent(words[2 * i]!, words[2 * i + 1]!, vals[i]!);
  }
}

/** Smallest power of two ≥ MIN_CAPACITY holding `n` entries at ≤ 3/4 load. */
function capacityFor(n: number): number {
  let c = MIN_CAPACITY;
  while (n * 4 > c * 3) c *= 2;
  return c;
}
