// Binds Bun's XXH3-64 to the injected hash port of src/core/kv/block-hash.ts.
import type { Xxh3 } from "../core/kv/block-hash.ts";
import { BlockHasher } from "../core/kv/block-hash.ts";

export const xxh3: Xxh3 = (data, seed) => Bun.hash.xxHash3(data as Uint8Array, seed);

export function createBlockHasher(): BlockHasher {
  return new BlockHasher(xxh3);
}
