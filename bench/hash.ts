// Block hashing throughput (src/core/kv/block-hash.ts): 64-token blocks of 8k-token prompts through
// BlockHasher.hashBlocks (number[] and Uint32Array input; the WebAssembly chain of src/lib/xxh3-wasm.ts)
// and through the per-block API, against a peer measured in the same run: the naive loop (a subarray
// and two bare Bun.hash.xxHash3 calls per block, no BlockHasher). Then, per block size, the chain
// against the same BlockHasher going block by block with Bun's call: where the chain stops paying.
// Run: `npx bun bench/hash.ts` (about 12 s; BENCH_ROUND_MS and BENCH_ROUNDS adjust it).
import { BLOCK_HASH_SEED, BlockHasher } from "../src/core/kv/block-hash.ts";
import { CHAIN_MAX_BLOCK_TOKENS, createBlockHasher, wasmChain, xxh3 } from "../src/lib/xxh3.ts";
import { envNumber, measure } from "./lib/measure.ts";

const BLOCK_SIZE = 64;
const PROMPT_TOKENS = 8192;
const BLOCKS = PROMPT_TOKENS / BLOCK_SIZE;

// Eight distinct prompts (realistic id range of a 152k vocabulary), cycled through.
const prompts: number[][] = Array.from({ length: 8 }, (_, p) =>
  Array.from({ length: PROMPT_TOKENS }, (_, i) => ((i + 1) * 2654435761 + p * 40503) % 151_936),
);
const typed = prompts.map((p) => Uint32Array.from(p));
const hasher = createBlockHasher();
let next = 0;
const low = (h: bigint) => Number(h & 0xffn);

const results = measure(
  [
    { name: "hashBlocks(number[])", unitsPerOp: BLOCKS, run: () => low(hasher.hashBlocks(prompts[next++ & 7]!, BLOCK_SIZE).sequence[BLOCKS - 1]!) },
    { name: "hashBlocks(Uint32Array)", unitsPerOp: BLOCKS, run: () => low(hasher.hashBlocks(typed[next++ & 7]!, BLOCK_SIZE).sequence[BLOCKS - 1]!) },
    {
      name: "per-block localHash + sequenceHash",
      unitsPerOp: BLOCKS,
      run: () => {
        const tokens = typed[next++ & 7]!;
        let parent: bigint | undefined;
        for (let b = 0; b < BLOCKS; b++) {
          parent = hasher.sequenceHash(parent, hasher.localHash(tokens.subarray(b * BLOCK_SIZE, (b + 1) * BLOCK_SIZE)));
        }
        return low(parent!);
      },
    },
    {
      name: "peer: naive subarray + 2 xxHash3",
      unitsPerOp: BLOCKS,
      run: () => {
        const tokens = typed[next++ & 7]!;
        const pair = new BigUint64Array(2);
        let acc = 0n;
        for (let b = 0; b < BLOCKS; b++) {
          pair[0] = acc;
          pair[1] = Bun.hash.xxHash3(tokens.subarray(b * BLOCK_SIZE, (b + 1) * BLOCK_SIZE), BLOCK_HASH_SEED);
          acc = Bun.hash.xxHash3(pair, BLOCK_HASH_SEED);
        }
        return low(acc);
      },
    },
  ],
  { roundMs: envNumber("BENCH_ROUND_MS", 400), rounds: envNumber("BENCH_ROUNDS", 3) },
);

console.log(`Block hashing: ${BLOCK_SIZE}-token blocks, ${PROMPT_TOKENS}-token prompts, Bun ${Bun.version} (best of interleaved rounds)\n`);
const peer = results.get("peer: naive subarray + 2 xxHash3")!;
for (const [name, rate] of results) {
  console.log(
    `${name.padEnd(36)} ${(rate / 1e6).toFixed(2).padStart(6)} M blocks/s ${((rate * BLOCK_SIZE) / 1e6).toFixed(0).padStart(6)} M tokens/s  ${(rate / peer).toFixed(2)}x peer`,
  );
}

// The chain against block by block, per block size (same prompts, Uint32Array).
const blockByBlock = new BlockHasher(xxh3);
const chainAlways = new BlockHasher(xxh3, wasmChain(Infinity));
console.log(`\nPer block size (the chain is used up to ${CHAIN_MAX_BLOCK_TOKENS} tokens a block):`);
for (const bs of [16, 64, 128, 256, 512]) {
  const blocks = PROMPT_TOKENS / bs;
  const r = measure(
    [
      { name: "chain", unitsPerOp: blocks, run: () => low(chainAlways.sequenceHashes(typed[next++ & 7]!, bs)[blocks - 1]!) },
      { name: "block by block", unitsPerOp: blocks, run: () => low(blockByBlock.sequenceHashes(typed[next++ & 7]!, bs)[blocks - 1]!) },
    ],
    { roundMs: envNumber("BENCH_ROUND_MS", 400), rounds: envNumber("BENCH_ROUNDS", 3) },
  );
  const chain = r.get("chain")!;
  const each = r.get("block by block")!;
  console.log(`  ${String(bs).padStart(3)}-token blocks: chain ${(chain / 1e6).toFixed(2)} M blocks/s, block by block ${(each / 1e6).toFixed(2)} M blocks/s → ${(chain / each).toFixed(2)}x`);
}
