// Binds XXH3-64 to the injected hash ports of src/core/kv/block-hash.ts: Bun's for single hashes,
// and the WebAssembly build (xxh3-wasm.ts) for a prompt's blocks in one call, where it is faster than
// Bun's call per block (blocks up to 128 tokens; larger ones go block by block, where Bun's native
// code wins: bench/hash.ts) and allocates nothing per block.
import type { BlockChain, Xxh3 } from "../core/kv/block-hash.ts";
import { BlockHasher } from "../core/kv/block-hash.ts";
import { Xxh3Wasm } from "./xxh3-wasm.ts";

export const xxh3: Xxh3 = (data, seed) => Bun.hash.xxHash3(data as Uint8Array, seed);

/** Blocks of up to this many tokens are hashed by the WebAssembly chain. */
export const CHAIN_MAX_BLOCK_TOKENS = 128;

let wasm: Xxh3Wasm | undefined;

/** The process's WebAssembly chain (made on first use), for blocks of up to `maxBlockTokens`. */
export function wasmChain(maxBlockTokens = CHAIN_MAX_BLOCK_TOKENS): BlockChain {
  const w = (wasm ??= new Xxh3Wasm());
  return {
    accepts: (blockSize) => blockSize <= maxBlockTokens,
    hash: (tokens, blockSize, seed, parent, local, sequence) => w.chain(tokens, blockSize, seed, parent, local, sequence),
  };
}

export function createBlockHasher(): BlockHasher {
  return new BlockHasher(xxh3, wasmChain());
}
