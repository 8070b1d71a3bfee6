// The router hint's prefix arithmetic against a small hand-built index: a rank's local prefix is
// its device prefix plus the contiguous host blocks after it; the hint names the rank with the
// longest such prefix beyond the chosen one, the first listed on a tie.
import { describe, expect, test } from "bun:test";
import { KvIndex } from "../index/kv-index.ts";
import { localPrefix, longerPrefixRank } from "./hints.ts";

const stored = (tier: "device" | "host", ...h: bigint[]) => ({ kind: "stored" as const, tier, blockHashes: h });
const q = [1n, 2n, 3n, 4n, 5n];

function index(): KvIndex {
  const ix = new KvIndex();
  ix.applyAll(0, [stored("device", 1n, 2n), stored("host", 3n)]); // 3: device 2 + host 1
  ix.applyAll(1, [stored("host", 1n, 2n)]); // 2: host only, from block 0
  ix.applyAll(2, [stored("device", 1n, 2n, 3n, 4n)]); // 4
  ix.applyAll(3, [stored("device", 1n), stored("host", 2n, 3n, 4n)]); // 4
  ix.applyAll(4, [stored("device", 2n, 3n)]); // 0: no block 0
  return ix;
}

describe("localPrefix", () => {
  test("device prefix plus the host continuation after it", () => {
    const ix = index();
    expect([0, 1, 2, 3, 4].map((r) => localPrefix(ix, q, r))).toEqual([3, 2, 4, 4, 0]);
  });
});

describe("longerPrefixRank", () => {
  test("the rank with the longest local prefix strictly beyond the chosen one", () => {
    const ix = index();
    expect(longerPrefixRank(ix, q, 2, [1, 0])).toEqual({ rankId: 0, blocks: 3 });
    expect(longerPrefixRank(ix, q, 2, [0, 1])).toEqual({ rankId: 0, blocks: 3 }); // the best listed first
    expect(longerPrefixRank(ix, q, 3, [0, 1, 4])).toBeUndefined(); // none longer than 3
  });

  test("a tie goes to the first listed", () => {
    const ix = index();
    expect(longerPrefixRank(ix, q, 1, [2, 3])).toEqual({ rankId: 2, blocks: 4 });
    expect(longerPrefixRank(ix, q, 1, [3, 2])).toEqual({ rankId: 3, blocks: 4 });
  });

  test("no ranks, or a chosen prefix covering the prompt: no hint", () => {
    const ix = index();
    expect(longerPrefixRank(ix, q, 0, [])).toBeUndefined();
    expect(longerPrefixRank(ix, q, 5, [2])).toBeUndefined();
  });
});
