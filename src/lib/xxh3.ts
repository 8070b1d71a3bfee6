// Binds XXH3-64 to the injected hash ports of src/core/kv/block-hash.ts: Bun's for single hashes,
// and the WebAssembly build (xxh3-wasm.ts) for a prompt's blocks in one call, where it is faster than
// Bun's call per block (blocks up to 128 tokens; larger ones go block by block, where Bun's native
// code wins: bench/hash.ts) and allocates nothing per block.
// Bun's binding reduces a seed mod 2^32, so seeds above it (a LoRA adapter's) go to the
// WebAssembly build, which takes all 64 bits.
import type { BlockChain, Xxh3 } from "../core/kv/block-hash.ts";
import { BLOCK_HASH_SEED, BlockHasher } from "../core/kv/block-hash.ts";
import { Xxh3Wasm } from "./xxh3-wasm.ts";

const SEED_32_END = 0x1_0000_0000n;

export const xxh3: Xxh3 = (data, seed) =>
  seed < SEED_32_END ? Bun.hash.xxHash3(data as Uint8Array, seed) : wasmInstance().hash(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), seed);

/** Blocks of up to this many tokens are hashed by the WebAssembly chain. */
export const CHAIN_MAX_BLOCK_TOKENS = 128;

let wasm: Xxh3Wasm | undefined;
const wasmInstance = () => (wasm ??= new Xxh3Wasm());

/** The process's WebAssembly chain (made on first use), for blocks of up to `maxBlockTokens`. */
export function wasmChain(maxBlockTokens = CHAIN_MAX_BLOCK_TOKENS): BlockChain {
  const w = wasmInstance();
  return {
    accepts: (blockSize) => blockSize <= maxBlockTokens,
    hash: (tokens, blockSize, seed, parent, local, sequence) => w.chain(tokens, blockSize, seed, parent, local, sequence, BLOCK_HASH_SEED),
  };
}

export function createBlockHasher(): BlockHasher {
  return new BlockHasher(xxh3, wasmChain());
}
