// The benchmark's message: a vLLM KV-event batch with one BlockStored of N blocks (block size 16,
// token ids from a 150k vocabulary), through kvcr-mock's own codec (src/protocol/kv-events), the
// bytes a real vLLM worker would publish. The Node/libzmq reference encodes the same map layout.
import { decodeBatch, decodeSeq, encodeBatch, encodeSeq, type BlockStored, type VllmKvEventBatch } from "../src/protocol/kv-events/index.ts";

export const BLOCK_SIZE = 16;

export interface Workload {
  /** Encodes the batch for message number `n` (ts and first hash vary per message). */
  encode(n: number): Uint8Array;
  /** Decodes a payload; returns the number of blocks of its first event (a cheap check). */
  decodeBlocks(payload: Uint8Array): number;
}

export function kvWorkload(blocks: number): Workload {
  const tokenIds = Array.from({ length: blocks * BLOCK_SIZE }, (_, i) => (1000 + i * 7919) % 151_000);
  const rest = Array.from({ length: blocks - 1 }, (_, i) => 0xcb38e4d7fb2dca5cn ^ BigInt((i + 1) * 0x9e3779b9));
  return {
    encode(n) {
      const event: BlockStored = {
        type: "BlockStored",
        blockHashes: [BigInt(n), ...rest],
        parentBlockHash: 0x44a2b2379d6d3c3dn,
        tokenIds,
        blockSize: BLOCK_SIZE,
        loraId: null,
        medium: "GPU",
        loraName: null,
      };
      const batch: VllmKvEventBatch = { ts: 1_760_000_000 + n / 1000, events: [event], dataParallelRank: 0 };
      return encodeBatch(batch);
    },
    decodeBlocks(payload) {
      const e = decodeBatch(payload).events[0];
      return e && e.type !== "AllBlocksCleared" ? e.blockHashes.length : -1;
    },
  };
}

/** Transport-only variant: one pre-encoded payload, no decode (the ZMTP layer's own ceiling). */
export function rawWorkload(blocks: number): Workload {
  const payload = kvWorkload(blocks).encode(0);
  return { encode: () => payload, decodeBlocks: () => blocks };
}

export const encodeSeqFrame = encodeSeq;
export const decodeSeqFrame = decodeSeq;
