// KV-event codec throughput (issue 2 item 6): encode and decode ops/s for a one-block and a 32-block
// batch, against plain msgpackr (the project's configured Packr) on the equivalent JS object in the
// same run. Run: `npx bun bench/codec.ts` (about 10 s; BENCH_ROUND_MS and BENCH_ROUNDS adjust it).
import { decodeBatch, encodeBatch } from "../src/protocol/kv-events/index.ts";
import type { KvEventBatch } from "../src/protocol/kv-events/index.ts";
import { packr } from "../src/protocol/msgpack.ts";
import { envNumber, measure } from "./lib/measure.ts";

const BLOCK_SIZE = 16;

/** Deterministic pseudo-random u32 stream (xorshift32) so every run measures the same bytes. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>>= 0);
  };
}

function makeBatch(blocks: number): KvEventBatch {
  const next = rng(blocks * 7919);
  const hash = () => (BigInt(next()) << 32n) | BigInt(next());
  return {
    ts: 1_700_000_000.123,
    dataParallelRank: 0,
    events: [
      {
        type: "BlockStored",
        blockHashes: Array.from({ length: blocks }, hash),
        parentBlockHash: hash(),
        tokenIds: Array.from({ length: blocks * BLOCK_SIZE }, () => next() % 128_000),
        blockSize: BLOCK_SIZE,
        loraId: null,
        medium: "GPU",
        loraName: null,
      },
    ],
  };
}

/** The same batch as the plain object a generic msgpack user would pack (vLLM field names). */
function asPlainObject(batch: KvEventBatch): unknown {
  return [
    batch.ts,
    batch.events.map((e) => {
      if (e.type !== "BlockStored") throw new Error("bench uses BlockStored only");
      return {
        type: e.type,
        block_hashes: e.blockHashes,
        parent_block_hash: e.parentBlockHash,
        token_ids: e.tokenIds,
        block_size: e.blockSize,
        lora_id: e.loraId,
        medium: e.medium,
        lora_name: e.loraName,
      };
    }),
    batch.dataParallelRank,
  ];
}

const opts = { roundMs: envNumber("BENCH_ROUND_MS", 300), rounds: envNumber("BENCH_ROUNDS", 3) };
const fmt = (n: number) => `${(n / 1e6).toFixed(2)} M/s`.padStart(10);
console.log(`KV-event codec, Bun ${Bun.version} (ops/s, best of interleaved rounds)\n`);
console.log("batch        bytes  op      ours        msgpackr    ours/msgpackr");
for (const blocks of [1, 32]) {
  const batch = makeBatch(blocks);
  const plain = asPlainObject(batch);
  const ours = encodeBatch(batch);
  const theirs = packr.pack(plain);
  const r = measure(
    [
      { name: "enc-ours", run: () => encodeBatch(batch).length },
      { name: "enc-peer", run: () => packr.pack(plain).length },
      { name: "dec-ours", run: () => decodeBatch(ours).events.length },
      { name: "dec-peer", run: () => (packr.unpack(theirs) as unknown[]).length },
    ],
    opts,
  );
  const [eo, ep, dO, dp] = ["enc-ours", "enc-peer", "dec-ours", "dec-peer"].map((k) => r.get(k)!) as [number, number, number, number];
  const label = `${blocks}-block`.padEnd(11);
  console.log(`${label} ${String(ours.length).padStart(6)}  encode ${fmt(eo)}  ${fmt(ep)}  ${(eo / ep).toFixed(2)}x`);
  console.log(`${" ".repeat(11)} ${String(theirs.length).padStart(6)}  decode ${fmt(dO)}  ${fmt(dp)}  ${(dO / dp).toFixed(2)}x`);
}
console.log("\n(bytes: ours on the encode line, msgpackr's on the decode line)");
