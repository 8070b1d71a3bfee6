import { describe, expect, test } from "bun:test";
import vectors from "../../../test/fixtures/vectors.json";
import { createBlockHasher } from "../../lib/xxh3.ts";

describe("block hashes match the independent vectors", () => {
  const hasher = createBlockHasher();
  for (const v of vectors.block_hashes) {
    test(v.name, () => {
      const fromArray = hasher.hashBlocks(v.tokens, v.block_size);
      expect([...fromArray.local].map(String)).toEqual(v.local_hashes);
      expect([...fromArray.sequence].map(String)).toEqual(v.sequence_hashes);
      const fromTyped = hasher.hashBlocks(Uint32Array.from(v.tokens), v.block_size);
      expect([...fromTyped.sequence].map(String)).toEqual(v.sequence_hashes);
      expect([...hasher.sequenceHashes(v.tokens, v.block_size)].map(String)).toEqual(v.sequence_hashes);
    });
  }

  test("block-at-a-time API agrees with the whole-prompt fast path", () => {
    const v = vectors.block_hashes.find((x) => x.name === "bs16-ascending")!;
    let parent: bigint | undefined;
    const seqs: string[] = [];
    for (let b = 0; b < v.local_hashes.length; b++) {
      const local = hasher.localHash(Uint32Array.from(v.tokens.slice(b * 16, b * 16 + 16)));
      parent = hasher.sequenceHash(parent, local);
      seqs.push(String(parent));
    }
    expect(seqs).toEqual(v.sequence_hashes);
  });

  test("a chain continued from a parent equals hashing the whole prompt", () => {
    const tokens = Array.from({ length: 64 * 5 }, (_, i) => (i * 7919) % 50_000);
    const whole = hasher.hashBlocks(tokens, 64);
    const head = hasher.hashBlocks(tokens.slice(0, 128), 64);
    const tail = hasher.hashBlocks(tokens.slice(128), 64, head.sequence[1]);
    expect([...head.sequence, ...tail.sequence]).toEqual([...whole.sequence]);
  });

  test("one hasher reused across block sizes and prompt lengths agrees with fresh ones", () => {
    // Guards the cached per-block views: they must follow block-size changes and buffer growth.
    const reused = createBlockHasher();
    const shapes: [number, number][] = [[64, 200], [16, 200], [16, 5000], [64, 5000], [4, 9], [64, 130], [16, 3000]];
    for (const [blockSize, length] of shapes) {
      const tokens = Array.from({ length }, (_, i) => (i * 2654435761 + blockSize * 7 + length) % 151_936);
      const want = createBlockHasher().hashBlocks(tokens, blockSize);
      expect(reused.hashBlocks(tokens, blockSize)).toEqual(want);
      expect(reused.hashBlocks(Uint32Array.from(tokens), blockSize)).toEqual(want);
      expect(reused.hashBlocks(Uint32Array.from(tokens).subarray(0, length), blockSize)).toEqual(want);
    }
  });

  test("no full block gives no hash", () => {
    expect(hasher.hashBlocks([1, 2, 3], 4).sequence.length).toBe(0);
  });
});
