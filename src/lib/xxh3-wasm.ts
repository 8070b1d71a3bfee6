// XXH3-64 in WebAssembly (wasm/xxh3.ts, embedded as src/lib/xxh3-wasm-bytes.ts): a prompt's block
// hashes in one call, written to the module's memory and copied out, with no bigint made per block
// (Bun.hash.xxHash3 returns one per call). One instance serves the process: calls are synchronous.
import { XXH3_WASM_BASE64 } from "./xxh3-wasm-bytes.ts";

interface Exports {
  memory: WebAssembly.Memory;
  heapBase(): number;
  xxh3(p: number, len: number, seedLo: number, seedHi: number, out: number): void;
  chain(p: number, count: number, blockBytes: number, seedLo: number, seedHi: number, seqSeedLo: number, seqSeedHi: number, hasParent: number, parentLo: number, parentHi: number, outLocal: number, outSeq: number): void;
}

const align8 = (n: number) => (n + 7) & ~7;

export class Xxh3Wasm {
  private readonly ex: Exports;
  /** The first byte the module leaves to its caller (inputs, then outputs). */
  private readonly base: number;
  private u8!: Uint8Array;
  private u32!: Uint32Array;
  private u64!: BigUint64Array;
  // Splits a bigint into its two u32 words without allocating.
  private readonly split = new BigUint64Array(1);
  private readonly splitWords = new Uint32Array(this.split.buffer);

  constructor() {
    const module = new WebAssembly.Module(Buffer.from(XXH3_WASM_BASE64, "base64"));
    this.ex = new WebAssembly.Instance(module, {}).exports as unknown as Exports;
    this.base = align8(this.ex.heapBase());
    this.views();
  }

  /** XXH3-64 of `data` with a 64-bit seed. */
  hash(data: Uint8Array, seed: bigint): bigint {
    const out = align8(this.base + data.length);
    this.reserve(out + 8);
    this.u8.set(data, this.base);
    this.split[0] = seed;
    this.ex.xxh3(this.base, data.length, this.splitWords[0]!, this.splitWords[1]!, out);
    return this.u64[out / 8]!;
  }

  /**
   * The block hashes of the first `sequence.length` full blocks of `tokens` (u32 token ids, `blockSize`
   * a block): local = XXH3(block's tokens as u32 LE), sequence = XXH3(previous sequence ‖ local), the
   * first block's sequence hash its local one unless `parent` continues a chain; local hashes with
   * `seed`, sequence hashes with `sequenceSeed` (the same unless a LoRA adapter seeds the local ones).
   */
  chain(tokens: ArrayLike<number>, blockSize: number, seed: bigint, parent: bigint | undefined, local: BigUint64Array | undefined, sequence: BigUint64Array, sequenceSeed: bigint = seed): void {
    const count = sequence.length;
    if (count === 0) return;
    const used = count * blockSize;
    const outSeq = align8(this.base + 4 * used);
    const outLocal = outSeq + 8 * count;
    this.reserve(outLocal + 8 * count);
    const at = this.base / 4;
    if (tokens instanceof Uint32Array) this.u32.set(tokens.length === used ? tokens : tokens.subarray(0, used), at);
    else for (let i = 0; i < used; i++) this.u32[at + i] = tokens[i]!;
    this.split[0] = parent ?? 0n;
    const parentLo = this.splitWords[0]!;
    const parentHi = this.splitWords[1]!;
    this.split[0] = sequenceSeed;
    const seqSeedLo = this.splitWords[0]!;
    const seqSeedHi = this.splitWords[1]!;
    this.split[0] = seed;
    this.ex.chain(this.base, count, 4 * blockSize, this.splitWords[0]!, this.splitWords[1]!, seqSeedLo, seqSeedHi, parent === undefined ? 0 : 1, parentLo, parentHi, local === undefined ? 0 : outLocal, outSeq);
    sequence.set(this.u64.subarray(outSeq / 8, outSeq / 8 + count));
    if (local !== undefined) local.set(this.u64.subarray(outLocal / 8, outLocal / 8 + count));
  }

  /** Grows the memory to hold `end` bytes (views are remade: growing detaches the old buffer). */
  private reserve(end: number): void {
    const memory = this.ex.memory;
    if (end > memory.buffer.byteLength) {
      memory.grow(Math.ceil((end - memory.buffer.byteLength) / 65536));
      this.views();
    }
  }

  private views(): void {
    const buffer = this.ex.memory.buffer;
    this.u8 = new Uint8Array(buffer);
    this.u32 = new Uint32Array(buffer);
    this.u64 = new BigUint64Array(buffer);
  }
}
