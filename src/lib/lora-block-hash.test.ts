// LoRA adapters' block hashes against vectors from an independent encoder (python xxhash):
// local hashes seeded (1337 + XXH3-64(name)) mod 2^64, a seed past 2^32, sequence hashes with 1337;
// through the WebAssembly chain and block by block (Bun's binding below 2^32, WebAssembly above).
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import vectors from "../../test/fixtures/lora-vectors.json";
import { BLOCK_HASH_SEED, BlockHasher } from "../core/kv/block-hash.ts";
import { createBlockHasher, xxh3 } from "./xxh3.ts";

const hashers = { "WebAssembly chain": createBlockHasher(), "block by block": new BlockHasher(xxh3) };

describe("LoRA block hashes equal the independent vectors", () => {
  for (const [how, hasher] of Object.entries(hashers)) {
    for (const c of vectors.cases) {
      test(`${c.name} (${how})`, () => {
        const seed = hasher.seedOf(c.lora_name);
        expect(seed.toString()).toBe(c.seed);
        const got = hasher.hashBlocks(c.tokens, c.block_size, undefined, seed);
        expect([...got.local].map(String)).toEqual(c.local_hashes);
        expect([...got.sequence].map(String)).toEqual(c.sequence_hashes);
        expect([...hasher.sequenceHashes(c.tokens, c.block_size, undefined, seed)].map(String)).toEqual(c.sequence_hashes);
        const first = hasher.localHash(Uint32Array.from(c.tokens.slice(0, c.block_size)), seed);
        expect(first.toString()).toBe(c.local_hashes[0]!);
      });
    }
  }

  test("every adapter seed of the vectors passes 2^32, where Bun's own binding would reduce it", () => {
    for (const c of vectors.cases.filter((c) => c.lora_name !== null)) {
      const seed = BigInt(c.seed);
      expect(seed).toBeGreaterThan(0xffffffffn);
      const block = Uint32Array.from(c.tokens.slice(0, c.block_size));
      expect(xxh3(block, seed)).not.toBe(Bun.hash.xxHash3(block, seed));
    }
  });

  test("a block over 128 tokens (hashed block by block) under an adapter differs from the base model's and is stable", () => {
    const hasher = createBlockHasher();
    const tokens = Array.from({ length: 512 }, (_, i) => i * 31);
    const base = hasher.hashBlocks(tokens, 256);
    const a = hasher.hashBlocks(tokens, 256, undefined, hasher.seedOf("adapter-a"));
    expect(a.sequence[0]).not.toBe(base.sequence[0]);
    expect(a.sequence[1]).not.toBe(base.sequence[1]);
    expect([...hasher.hashBlocks(tokens, 256, undefined, hasher.seedOf("adapter-a")).sequence]).toEqual([...a.sequence]);
    expect(hasher.seedOf(null)).toBe(BLOCK_HASH_SEED);
  });

  test("under any adapter name the WebAssembly chain equals hashing block by block", () => {
    const chain = createBlockHasher();
    const byBlock = new BlockHasher(xxh3);
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40 }), fc.array(fc.integer({ min: 0, max: 0xffffffff }), { maxLength: 300 }), fc.integer({ min: 1, max: 128 }), fc.option(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })), (name, tokens, blockSize, parent) => {
        const seed = chain.seedOf(name);
        expect(byBlock.seedOf(name)).toBe(seed);
        const want = byBlock.hashBlocks(tokens, blockSize, parent ?? undefined, seed);
        const got = chain.hashBlocks(tokens, blockSize, parent ?? undefined, seed);
        expect([...got.local]).toEqual([...want.local]);
        expect([...got.sequence]).toEqual([...want.sequence]);
      }),
      { numRuns: 200, seed: 38 },
    );
  });
});
