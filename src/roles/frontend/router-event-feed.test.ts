import { describe, expect, test } from "bun:test";
import { KvIndex } from "../../core/index/kv-index.ts";
import type { RouterEvent, RouterEventHolder } from "../../protocol/router-events.ts";
import { RouterEventFeed } from "./router-event-feed.ts";

const blocks = (...h: bigint[]) => h.map((seqHash) => ({ seqHash, localHash: 0n }));
const stored = (holder: RouterEventHolder, ...h: bigint[]): RouterEvent => ({ holder, tier: "device", kind: "stored", blocks: blocks(...h), parentHash: null });

describe("router event feed", () => {
  test("a batch mixing holders applies each event to its own rank and counts the unmapped", () => {
    const ranks = new Map([["w0/0", 0], ["w0/1", 1], ["w1/0", 2], ["owner-a", 3]]);
    let resolved = 0;
    const resolve = (h: RouterEventHolder) => {
      resolved++;
      return ranks.get("cacheOwnerId" in h ? h.cacheOwnerId : `${h.workerId}/${h.dpRank}`);
    };
    const index = new KvIndex();
    const feed = new RouterEventFeed(index, resolve);
    // Fresh holder objects per event, as the decoder makes them: runs are matched by value.
    const unmapped = feed.apply([
      stored({ workerId: "w0", dpRank: 0 }, 1n, 2n),
      stored({ workerId: "w0", dpRank: 0 }, 3n),
      stored({ workerId: "w0", dpRank: 1 }, 4n),
      stored({ cacheOwnerId: "owner-a" }, 5n),
      stored({ workerId: "w9", dpRank: 0 }, 6n),
      stored({ workerId: "w1", dpRank: 0 }, 7n),
      { holder: { workerId: "w0", dpRank: 0 }, tier: "device", kind: "removed", blocks: blocks(2n), parentHash: null },
      { holder: { workerId: "w1", dpRank: 0 }, tier: "device", kind: "cleared", blocks: [], parentHash: null },
    ]);
    expect(unmapped).toBe(1);
    expect(resolved).toBe(7); // the second w0/0 event reused the first's rank
    expect(new Set(index.blocksOf(0, "device"))).toEqual(new Set([1n, 3n]));
    expect(index.blocksOf(1, "device")).toEqual([4n]);
    expect(index.blocksOf(3, "device")).toEqual([5n]);
    expect(index.blocksOf(2, "device")).toEqual([]);
  });

  test("a store whose parent the rank does not hold is dropped, one whose parent it holds is kept", () => {
    const index = new KvIndex();
    const feed = new RouterEventFeed(index, () => 0);
    const w = { workerId: "w0", dpRank: 0 };
    feed.apply([{ ...stored(w, 2n), parentHash: 1n }]);
    expect(index.orphanStores).toBe(1);
    feed.apply([stored(w, 1n), { ...stored(w, 2n), parentHash: 1n }]);
    expect(new Set(index.blocksOf(0, "device"))).toEqual(new Set([1n, 2n]));
  });
});
