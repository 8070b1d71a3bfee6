// Block hashes as Dynamo's router computes them: local hash = XXH3-64(seed 1337) of a block's token
// ids as u32 LE; sequence hash chains the previous sequence hash and the local hash (16 bytes, both
// u64 LE). A LoRA adapter seeds the local hashes with (1337 + XXH3-64(UTF-8 name)) mod 2^64
// (Dynamo's router; the sequence hashes keep 1337), so one prompt under two adapters shares no
// block. The XXH3 function is injected (src/lib/xxh3.ts binds Bun's, and a WebAssembly chain of a
// whole prompt's blocks) so this file stays pure.

export const BLOCK_HASH_SEED = 1337n;
const U64_MASK = (1n << 64n) - 1n;

/** XXH3-64 over the bytes of a typed-array view (byteOffset honoured), with a u64 seed. */
export type Xxh3 = (data: ArrayBufferView, seed: bigint) => bigint;

/** A prompt's block hashes in one call: the same hashes as block by block with Xxh3, made faster. */
export interface BlockChain {
  /** Whether blocks of this many tokens go through the chain (otherwise block by block). */
  accepts(blockSize: number): boolean;
  /**
   * Writes the local (when given) and sequence hashes of the first `sequence.length` full blocks of
   * `tokens`, chained from `parent` when given; `seed` seeds the local hashes, BLOCK_HASH_SEED the
   * sequence hashes.
   */
  hash(tokens: ArrayLike<number>, blockSize: number, seed: bigint, parent: bigint | undefined, local: BigUint64Array | undefined, sequence: BigUint64Array): void;
}

export interface BlockHashes {
  /** One per full block, in order; the partial tail block has none. */
  readonly local: BigUint64Array;
  readonly sequence: BigUint64Array;
}

export class BlockHasher {
  // Reused scratch: the 16-byte (prev seq ‖ local) input, a token staging buffer and cached
  // per-block views into it. Creating a subarray per block costs about as much as hashing the
  // block itself (bench/hash.ts), so the views are made once per (staging buffer, block size).
  private readonly pair = new BigUint64Array(2);
  private staging = new Uint32Array(1024);
  private views: Uint32Array[] = [];
  private viewsBlockSize = 0;
  private readonly adapterSeeds = new Map<string, bigint>();
  private readonly utf8 = new TextEncoder();

  constructor(
    private readonly xxh3: Xxh3,
    private readonly chain?: BlockChain,
  ) {}

  /**
   * The local-hash seed of blocks computed under a LoRA adapter (null or undefined: the base
   * model's, BLOCK_HASH_SEED): 1337 + XXH3-64(UTF-8 name, seed 0), wrapping at 2^64.
   */
  seedOf(loraName: string | null | undefined): bigint {
    if (loraName === null || loraName === undefined) return BLOCK_HASH_SEED;
    let seed = this.adapterSeeds.get(loraName);
    if (seed === undefined) {
      seed = (BLOCK_HASH_SEED + this.xxh3(this.utf8.encode(loraName), 0n)) & U64_MASK;
      this.adapterSeeds.set(loraName, seed);
    }
    return seed;
  }

  /** Local hash of exactly one block's tokens (`seed`: seedOf(adapter), the base model's by default). */
  localHash(blockTokens: Uint32Array, seed: bigint = BLOCK_HASH_SEED): bigint {
    return this.xxh3(blockTokens, seed);
  }

  /** Sequence hash of block i given block i-1's sequence hash (undefined for block 0). */
  sequenceHash(parent: bigint | undefined, local: bigint): bigint {
    if (parent === undefined) return local;
    this.pair[0] = parent;
    this.pair[1] = local;
    return this.xxh3(this.pair, BLOCK_HASH_SEED);
  }

  /**
   * Hashes every full block of a prompt in one pass: tokens are staged once into a reused
   * Uint32Array and each block is hashed through a cached view of it (no per-block allocation
   * besides the two result bigints). `parent` continues a chain (e.g. blocks completed by
   * generated tokens after a prefix). `seed` seeds the local hashes: seedOf(adapter) for a LoRA
   * adapter's blocks, the base model's by default.
   */
  hashBlocks(tokens: ArrayLike<number>, blockSize: number, parent?: bigint, seed: bigint = BLOCK_HASH_SEED): BlockHashes {
    const count = Math.floor(tokens.length / blockSize);
    const local = new BigUint64Array(count);
    const sequence = new BigUint64Array(count);
    this.hashInto(tokens, blockSize, parent, local, sequence, seed);
    return { local, sequence };
  }

  /** hashBlocks() without the local hashes (a router needs only the sequence hashes). */
  sequenceHashes(tokens: ArrayLike<number>, blockSize: number, parent?: bigint, seed: bigint = BLOCK_HASH_SEED): BigUint64Array {
    const sequence = new BigUint64Array(Math.floor(tokens.length / blockSize));
    this.hashInto(tokens, blockSize, parent, undefined, sequence, seed);
    return sequence;
  }

  private hashInto(tokens: ArrayLike<number>, blockSize: number, parent: bigint | undefined, local: BigUint64Array | undefined, sequence: BigUint64Array, seed: bigint): void {
    const count = sequence.length;
    if (count === 0) return;
    if (this.chain?.accepts(blockSize)) {
      this.chain.hash(tokens, blockSize, seed, parent, local, sequence);
      return;
    }
    const used = count * blockSize;
    const staging = this.stage(used);
    if (tokens instanceof Uint32Array) {
      staging.set(tokens.length === used ? tokens : tokens.subarray(0, used));
    } else {
      for (let i = 0; i < used; i++) staging[i] = tokens[i]!;
    }
    const views = this.blockViews(blockSize, count);
    const pair = this.pair;
    let prev = parent;
    for (let b = 0; b < count; b++) {
      const l = this.xxh3(views[b]!, seed);
      let s = l;
      if (prev !== undefined) {
        pair[0] = prev;
        pair[1] = l;
        s = this.xxh3(pair, BLOCK_HASH_SEED);
      }
      if (local !== undefined) local[b] = l;
      sequence[b] = s;
      prev = s;
    }
  }

  /** The staging buffer, grown (and the view cache dropped) when `tokens` do not fit. */
  private stage(tokens: number): Uint32Array {
    if (this.staging.length < tokens) {
      this.staging = new Uint32Array(Math.max(tokens, this.staging.length * 2));
      this.views = [];
    }
    return this.staging;
  }

  /** Views of blocks 0..count-1 of the staging buffer for this block size, made on first use. */
  private blockViews(blockSize: number, count: number): Uint32Array[] {
    if (this.viewsBlockSize !== blockSize) {
      this.views = [];
      this.viewsBlockSize = blockSize;
    }
    const views = this.views;
    for (let b = views.length; b < count; b++) views.push(this.staging.subarray(b * blockSize, (b + 1) * blockSize));
    return views;
  }
}
