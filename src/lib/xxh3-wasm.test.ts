// The WebAssembly XXH3 against Bun's native one: every input length through each of the algorithm's
// size classes, several seeds, and the block chain against hashing block by block (with and without
// a parent, local hashes on or off, memory grown mid-way). Bun's binding takes a 32-bit seed, so
// seeds here fit 32 bits (the block hashes use 1337).
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { BLOCK_HASH_SEED, BlockHasher } from "../core/kv/block-hash.ts";
import { xxh3 } from "./xxh3.ts";
import { Xxh3Wasm } from "./xxh3-wasm.ts";

const wasm = new Xxh3Wasm();
const blockByBlock = new BlockHasher(xxh3);

describe("XXH3 in WebAssembly", () => {
  test("equals Bun.hash.xxHash3 at every length to 2,100 bytes (all size classes, two 1,024-byte blocks and more)", () => {
    const data = new Uint8Array(2100);
    let x = 12345;
    for (let i = 0; i < data.length; i++) data[i] = (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24;
    for (const seed of [0n, BLOCK_HASH_SEED, 0xffffffffn, 2249056121n]) {
      for (let len = 0; len <= data.length; len++) {
        const view = data.subarray(0, len);
        if (wasm.hash(view, seed) !== Bun.hash.xxHash3(view, seed)) throw new Error(`length ${len}, seed ${seed}: differs from Bun.hash.xxHash3`);
      }
    }
  });

  test("a prompt's chain equals hashing block by block, for any block size, parent and prompt", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 0xffffffff }), { maxLength: 700 }),
        fc.integer({ min: 1, max: 300 }),
        fc.option(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })),
        fc.boolean(),
        (tokens, blockSize, parent, typed) => {
          const count = Math.floor(tokens.length / blockSize);
          const want = blockByBlock.hashBlocks(tokens, blockSize, parent ?? undefined);
          const local = new BigUint64Array(count);
          const sequence = new BigUint64Array(count);
          wasm.chain(typed ? Uint32Array.from(tokens) : tokens, blockSize, BLOCK_HASH_SEED, parent ?? undefined, local, sequence);
          expect([...local]).toEqual([...want.local]);
          expect([...sequence]).toEqual([...want.sequence]);
          const only = new BigUint64Array(count);
          wasm.chain(tokens, blockSize, BLOCK_HASH_SEED, parent ?? undefined, undefined, only);
          expect([...only]).toEqual([...want.sequence]);
        },
      ),
      { numRuns: 300, seed: 7 },
    );
  });

  test("a prompt larger than the module's memory grows it and hashes the same", () => {
    const tokens = Uint32Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 100_000);
    const sequence = new BigUint64Array(Math.floor(tokens.length / 64));
    new Xxh3Wasm().chain(tokens, 64, BLOCK_HASH_SEED, undefined, undefined, sequence);
    expect([...sequence]).toEqual([...blockByBlock.hashBlocks(tokens, 64).sequence]);
  });
});
