// Block hashes of SPEC §4.1: local hash = XXH3-64(seed 1337) of a block's token ids as u32 LE;
// sequence hash chains the previous sequence hash and the local hash (16 bytes, both u64 LE).
// The XXH3 function is injected (src/lib/xxh3.ts binds Bun's) so this file stays pure.

export const BLOCK_HASH_SEED = 1337n;

/** XXH3-64 over the bytes of a typed-array view (byteOffset honoured), with a u64 seed. */
export type Xxh3 = (data: ArrayBufferView, seed: bigint) => bigint;

export interface BlockHashes {
  /** One per full block, in order; the partial tail block has none. */
  readonly local: BigUint64Array;
  readonly sequence: BigUint64Array;
}

export class BlockHasher {
  // Reused scratch: the 16-byte (prev seq ‖ local) input and a token staging buffer.
  private readonly pair = new BigUint64Array(2);
  private staging = new Uint32Array(1024);

  constructor(private readonly xxh3: Xxh3) {}

  /** Local hash of exactly one block's tokens. */
  localHash(blockTokens: Uint32Array): bigint {
    return this.xxh3(blockTokens, BLOCK_HASH_SEED);
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
   * Uint32Array and each block is hashed through a subarray view (no per-block copies).
   * `parent` continues a chain (e.g. blocks completed by generated tokens after a prefix).
   */
  hashBlocks(tokens: ArrayLike<number>, blockSize: number, parent?: bigint): BlockHashes {
    const count = Math.floor(tokens.length / blockSize);
    const local = new BigUint64Array(count);
    const sequence = new BigUint64Array(count);
    if (count === 0) return { local, sequence };
    const used = count * blockSize;
    let view: Uint32Array;
    if (tokens instanceof Uint32Array) {
      view = tokens;
    } else {
      if (this.staging.length < used) this.staging = new Uint32Array(Math.max(used, this.staging.length * 2));
      view = this.staging;
      for (let i = 0; i < used; i++) view[i] = tokens[i]!;
    }
    let prev = parent;
    for (let b = 0; b < count; b++) {
      const l = this.xxh3(view.subarray(b * blockSize, (b + 1) * blockSize), BLOCK_HASH_SEED);
      const s = this.sequenceHash(prev, l);
      local[b] = l;
      sequence[b] = s;
      prev = s;
    }
    return { local, sequence };
  }
}
