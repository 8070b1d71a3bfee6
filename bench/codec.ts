// KV-event codec throughput: encode and decode ops/s of the batches the mocker really publishes
// (engine events mapped by roles/mocker/raw-events.ts: extra_keys, group_idx, kv_cache_spec_kind,
// and in state-agent mode `ownership: "kvcr"` on host-tier events), against plain msgpackr (the
// project's configured Packr) on the equivalent JS object with the same keys, in the same run.
// Run: `npx bun bench/codec.ts` (about a minute; BENCH_ROUND_MS (default 800) and BENCH_ROUNDS
// (default 5) adjust it; each figure is the best of its interleaved rounds).
import type { KvEvent } from "../src/core/kv/kv-events.ts";
import { decodeBatch, encodeBatch } from "../src/protocol/kv-events/index.ts";
import type { VllmKvEventBatch } from "../src/protocol/kv-events/index.ts";
import { packr } from "../src/protocol/msgpack.ts";
import { toVllmEvents } from "../src/roles/mocker/raw-events.ts";
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

interface Case {
  label: string;
  batch: VllmKvEventBatch;
}

/** A G1 store of `blocks` blocks as one engine step emits it, in direct mode. */
function deviceStore(blocks: number): Case {
  const next = rng(blocks * 7919);
  const hash = () => (BigInt(next()) << 32n) | BigInt(next());
  const hashes = Array.from({ length: blocks }, hash);
  const events: KvEvent[] = [
    {
      kind: "stored",
      tier: "device",
      parentHash: hash(),
      blockHashes: hashes,
      localHashes: hashes,
      tokenIds: Uint32Array.from({ length: blocks * BLOCK_SIZE }, () => next() % 128_000),
      blockSize: BLOCK_SIZE,
    },
  ];
  return { label: `${blocks}-block G1 store`, batch: { ts: 1_700_000_000.123, events: toVllmEvents(events, false), dataParallelRank: 0 } };
}

/** A state-agent step: 32 blocks offloaded to G2 (ownership "kvcr") and 32 evicted from G1. */
function hostOffload(): Case {
  const next = rng(4242);
  const hash = () => (BigInt(next()) << 32n) | BigInt(next());
  const hashes = Array.from({ length: 32 }, hash);
  const events: KvEvent[] = [
    { kind: "stored", tier: "host", parentHash: hash(), blockHashes: hashes, localHashes: hashes, tokenIds: Uint32Array.from({ length: 32 * BLOCK_SIZE }, () => next() % 128_000), blockSize: BLOCK_SIZE },
    { kind: "removed", tier: "device", blockHashes: hashes.slice() },
  ];
  return { label: "G2 store + G1 removal, 32 blocks each (state agent)", batch: { ts: 1_700_000_000.123, events: toVllmEvents(events, true), dataParallelRank: 0 } };
}

/** The same batch as the plain object a generic msgpack user would pack (vLLM field names, same keys). */
function asPlainObject(batch: VllmKvEventBatch): unknown {
  return [
    batch.ts,
    batch.events.map((e) => {
      switch (e.type) {
        case "BlockStored":
          return {
            type: e.type,
            block_hashes: e.blockHashes,
            parent_block_hash: e.parentBlockHash,
            token_ids: e.tokenIds,
            block_size: e.blockSize,
            lora_id: e.loraId,
            medium: e.medium,
            lora_name: e.loraName,
            extra_keys: e.extraKeys,
            group_idx: e.groupIdx,
            kv_cache_spec_kind: e.kvCacheSpecKind,
            ...(e.ownership !== undefined ? { ownership: e.ownership } : {}),
          };
        case "BlockRemoved":
          return { type: e.type, block_hashes: e.blockHashes, medium: e.medium, group_idx: e.groupIdx, ...(e.ownership !== undefined ? { ownership: e.ownership } : {}) };
        default:
          return { type: e.type };
      }
    }),
    batch.dataParallelRank,
  ];
}

const opts = { roundMs: envNumber("BENCH_ROUND_MS", 800), rounds: envNumber("BENCH_ROUNDS", 5) };
const fmt = (n: number) => `${(n / 1e6).toFixed(2)} M/s`.padStart(10);
console.log(`KV-event codec on the mocker's own batches, Bun ${Bun.version} (ops/s, best of ${opts.rounds} interleaved rounds of ${opts.roundMs} ms)\n`);
console.log("batch                                                 bytes  op      ours        msgpackr    ours/msgpackr");
for (const { label, batch } of [deviceStore(1), deviceStore(32), hostOffload()]) {
  const plain = asPlainObject(batch);
  const ours = encodeBatch(batch);
  const theirs = packr.pack(plain);
  if (decodeBatch(ours).events.length !== batch.events.length) throw new Error(`${label}: our bytes do not round-trip`);
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
  console.log(`${label.padEnd(52)} ${String(ours.length).padStart(6)}  encode ${fmt(eo)}  ${fmt(ep)}  ${(eo / ep).toFixed(2)}x`);
  console.log(`${" ".repeat(52)} ${String(theirs.length).padStart(6)}  decode ${fmt(dO)}  ${fmt(dp)}  ${(dO / dp).toFixed(2)}x`);
}
console.log("\n(bytes: ours on the encode line, msgpackr's on the decode line)");
