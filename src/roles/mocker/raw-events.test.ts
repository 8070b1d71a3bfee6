// Engine events → vLLM wire events: the mapped batches reproduce the golden vLLM bytes, media and
// ownership follow tier and mode, token ids are copied out of the engine's (reused) views.
import { describe, expect, test } from "bun:test";
import vectors from "../../../test/fixtures/vectors.json";
import type { KvEvent } from "../../core/kv/kv-events.ts";
import { decodeBatch, encodeBatch, type BlockStored } from "../../protocol/kv-events/index.ts";
import { toVllmEvents } from "./raw-events.ts";

const H1 = 0xcb38e4d7fb2dca5cn;
const H2 = 0x44a2b2379d6d3c3dn;
const L1 = 0x1111n;
const L2 = 0x2222n;
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const golden = (name: string) => vectors.wire_batches.find((w) => w.name === name)!.hex;

describe("engine events reproduce vLLM's golden bytes (fixtures/vectors.json)", () => {
  test("g1-store-remove-clear: device store of two chained blocks, tail removal, clear (direct mode)", () => {
    const events: KvEvent[] = [
      { kind: "stored", tier: "device", parentHash: null, blockHashes: [H1, H2], localHashes: [L1, L2], tokenIds: new Uint32Array([1, 2, 3, 4, 5, 6, 7, 8]), blockSize: 4 },
      { kind: "removed", tier: "device", blockHashes: [H2] },
      { kind: "cleared", tier: "device" },
    ];
    const payload = encodeBatch({ ts: 1700000000.5, events: toVllmEvents(events, false), dataParallelRank: 0 });
    expect(hex(payload)).toBe(golden("g1-store-remove-clear"));
  });

  test("g2-kvcr-store: host store and removal carry ownership kvcr in state-agent mode", () => {
    const events: KvEvent[] = [
      { kind: "stored", tier: "host", parentHash: H1, blockHashes: [H2], localHashes: [L2], tokenIds: new Uint32Array([5, 6, 7, 8]), blockSize: 4 },
      { kind: "removed", tier: "host", blockHashes: [H2] },
    ];
    const payload = encodeBatch({ ts: 1700000001.25, events: toVllmEvents(events, true), dataParallelRank: 1 });
    expect(hex(payload)).toBe(golden("g2-kvcr-store"));
  });
});

describe("mapping rules", () => {
  const stored = (tier: "device" | "host"): KvEvent => ({ kind: "stored", tier, parentHash: null, blockHashes: [H1], localHashes: [L1], tokenIds: new Uint32Array([9, 8, 7, 6]), blockSize: 4 });
  const removed = (tier: "device" | "host"): KvEvent => ({ kind: "removed", tier, blockHashes: [H1] });

  test("device events never carry ownership, host events only in state-agent mode", () => {
    const all = [stored("device"), removed("device"), stored("host"), removed("host")];
    const media = (evs: ReturnType<typeof toVllmEvents>) => evs.map((e) => (e.type === "AllBlocksCleared" ? null : [e.medium, e.ownership ?? null]));
    expect(media(toVllmEvents(all, true))).toEqual([["GPU", null], ["GPU", null], ["CPU_PINNED", "kvcr"], ["CPU_PINNED", "kvcr"]]);
    expect(media(toVllmEvents(all, false))).toEqual([["GPU", null], ["GPU", null], ["CPU_PINNED", null], ["CPU_PINNED", null]]);
  });

  test("an absent ownership is absent on the wire, not nil", () => {
    const wire = decodeBatch(encodeBatch({ ts: 1, events: toVllmEvents([stored("host")], false), dataParallelRank: 0 }));
    expect("ownership" in wire.events[0]!).toBe(false);
  });

  test("token ids are copied: reusing the engine's buffer afterwards does not change the event", () => {
    const buffer = new Uint32Array([1, 2, 3, 4, 5, 6, 7, 8]);
    const [e] = toVllmEvents([{ kind: "stored", tier: "device", parentHash: null, blockHashes: [H2], localHashes: [L2], tokenIds: buffer.subarray(4, 8), blockSize: 4 }], false);
    buffer.fill(0);
    expect((e as BlockStored).tokenIds).toEqual([5, 6, 7, 8]);
    expect((e as BlockStored).extraKeys).toEqual([null]);
  });

  test("a stored event whose token count is not blocks × blockSize is refused with the counts", () => {
    const bad: KvEvent = { kind: "stored", tier: "device", parentHash: null, blockHashes: [H1, H2], localHashes: [L1, L2], tokenIds: new Uint32Array(7), blockSize: 4 };
    expect(() => toVllmEvents([bad], false)).toThrow("7 token ids for 2 blocks of 4; expected 8");
  });

  test("extra_keys has one null per block, also beyond the cached lengths", () => {
    const n = 300;
    const [e] = toVllmEvents([{ kind: "stored", tier: "device", parentHash: null, blockHashes: Array.from({ length: n }, (_, i) => BigInt(i)), localHashes: Array.from({ length: n }, (_, i) => BigInt(i)), tokenIds: new Uint32Array(n), blockSize: 1 }], false);
    expect((e as BlockStored).extraKeys).toEqual(new Array(n).fill(null));
  });
});
