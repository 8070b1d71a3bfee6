// The benchmark's message: a vLLM KV-event batch with one BlockStored of N blocks (block size 16,
// token ids from a 150k vocabulary), encoded as on the wire. Interim codec: msgpackr with vLLM's
// map layout, until src/protocol/kv-events lands on main (then this file switches to it).
import { Packr } from "msgpackr";

export const BLOCK_SIZE = 16;
const packr = new Packr({ useRecords: false, int64AsType: "bigint", variableMapSize: true });

export interface Workload {
  /** Encodes the batch for message number `n` (ts and first hash vary per message). */
  encode(n: number): Uint8Array;
  /** Decodes a payload; returns the number of blocks of its first event (a cheap check). */
  decodeBlocks(payload: Uint8Array): number;
}

/** Transport-only variant: one pre-encoded payload, no decode (the ZMTP layer's own ceiling). */
export function rawWorkload(blocks: number): Workload {
  const payload = kvWorkload(blocks).encode(0);
  return { encode: () => payload, decodeBlocks: () => blocks };
}

export function kvWorkload(blocks: number): Workload {
  const hashes = Array.from({ length: blocks }, (_, i) => 0xcb38e4d7fb2dca5cn ^ BigInt(i * 0x9e3779b9));
  const tokens = Array.from({ length: blocks * BLOCK_SIZE }, (_, i) => (1000 + i * 7919) % 151_000);
  const event = {
    type: "BlockStored",
    block_hashes: hashes,
    parent_block_hash: 0x44a2b2379d6d3c3dn,
    token_ids: tokens,
    block_size: BLOCK_SIZE,
    lora_id: null,
    medium: "GPU",
    lora_name: null,
  };
  const batch: [number, unknown[], number] = [0, [event], 0];
  return {
    encode(n) {
      batch[0] = 1_760_000_000 + n / 1000;
      hashes[0] = BigInt(n);
      return packr.pack(batch);
    },
    decodeBlocks(payload) {
      const [, events] = packr.unpack(payload) as [number, { block_hashes: unknown[] }[]];
      return events[0]?.block_hashes.length ?? -1;
    },
  };
}

export function encodeSeqFrame(seq: bigint): Uint8Array {
  const frame = new Uint8Array(8);
  new DataView(frame.buffer).setBigUint64(0, seq);
  return frame;
}
export function decodeSeqFrame(frame: Uint8Array): bigint {
  return new DataView(frame.buffer, frame.byteOffset, 8).getBigUint64(0);
}
