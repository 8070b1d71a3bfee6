import { describe, expect, test } from "bun:test";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { polynomialPrefillMs } from "../timing/timing-model.ts";
import { OracleView } from "./oracle-view.ts";

const hasher = createBlockHasher();
const timing = { timingModel: "polynomial", prefillMs: 20, maxNumBatchedTokens: 8192 } as const;

describe("replay view: a decision judged against the engines' state", () => {
  test("the router's index was stale: view says B holds the 8-block prefix, the request went to A", () => {
    const bs = 16;
    const prompt = Uint32Array.from({ length: 8 * bs + 5 }, (_, i) => i + 1); // 8 full blocks + 5 tokens
    const { sequence, local } = hasher.hashBlocks(prompt, bs);
    const view = new OracleView(2, bs, timing);
    const A = 0, B = 1;
    view.stepped(B, [{ kind: "stored", tier: "device", parentHash: null, blockHashes: [...sequence], localHashes: [...local], tokenIds: prompt.subarray(0, 8 * bs), blockSize: bs }]);
    view.dispatched(A); // A already runs one request, B none
    view.judge(A, sequence, prompt.length);
    const s = view.summary();
    expect(s.requests).toBe(1);
    expect(s.best_cache_share).toBe(0);
    expect(s.mean_blocks).toBe(8);
    expect(s.p99_blocks).toBe(8);
    // A recomputes all 133 tokens, B would have recomputed the 5 after the prefix.
    expect(s.mean_prefill_ms).toBeCloseTo(polynomialPrefillMs(133) - polynomialPrefillMs(5), 9);
    expect(s.histogram).toEqual([{ bucket_blocks: 0, count: 0 }, { bucket_blocks: 1, count: 0 }, { bucket_blocks: 2, count: 0 }, { bucket_blocks: 4, count: 0 }, { bucket_blocks: 8, count: 1 }]);
    expect(s.load).toMatchObject({ requests: 1, least_loaded_share: 0, mean: 1 });
    expect(s.interval_s).toBe(0);
  });

  test("a host continuation counts whole; the best is read across every rank", () => {
    const bs = 4;
    const prompt = Uint32Array.from({ length: 4 * bs }, (_, i) => i + 7);
    const { sequence, local } = hasher.hashBlocks(prompt, bs);
    const view = new OracleView(3, bs, timing);
    const stored = (tier: "device" | "host", from: number, to: number) => ({ kind: "stored" as const, tier, parentHash: from === 0 ? null : sequence[from - 1]!, blockHashes: [...sequence.subarray(from, to)], localHashes: [...local.subarray(from, to)], tokenIds: prompt.subarray(from * bs, to * bs), blockSize: bs });
    view.stepped(0, [stored("device", 0, 2)]); // rank 0: 2 device blocks
    view.stepped(2, [stored("device", 0, 1), stored("host", 1, 4)]); // rank 2: 1 device + 3 host = 4
    view.judge(0, sequence, prompt.length);
    view.judge(2, sequence, prompt.length);
    expect(view.summary()).toMatchObject({ requests: 2, best_cache_share: 0.5, mean_blocks: 1 });
  });
});

describe("replay view: lower tiers", () => {
  test("a prefix another rank holds on host counts as the best overlap (every rank read)", () => {
    const bs = 16;
    const prompt = Uint32Array.from({ length: 4 * bs }, (_, i) => i + 7);
    const { sequence, local } = hasher.hashBlocks(prompt, bs);
    const view = new OracleView(3, bs, timing);
    view.stepped(2, [{ kind: "stored", tier: "host", parentHash: null, blockHashes: [...sequence], localHashes: [...local], tokenIds: prompt, blockSize: bs }]);
    view.judge(0, sequence, prompt.length);
    expect(view.summary()).toMatchObject({ requests: 1, mean_blocks: 4, best_cache_share: 0 });
  });
});

describe("replay view: queue depths", () => {
  test("the least depth follows completions and queues deeper than 16 (the depth table's first size)", () => {
    const view = new OracleView(2, 16, timing);
    const none = new BigUint64Array(0);
    view.dispatched(0);
    view.dispatched(1); // both at 1
    view.completed(0); // rank 0 back to 0: the least depth is 0 again
    view.judge(1, none, 16); // rank 1 at 1 against a least of 0: 1 extra
    for (let i = 0; i < 20; i++) view.dispatched(0); // rank 0 at 20, rank 1 at 1: least 1
    view.judge(0, none, 16); // 19 extra
    for (let i = 0; i < 20; i++) view.completed(0); // rank 0 at 0 again
    view.judge(1, none, 16); // 1 extra
    expect(view.summary().load).toMatchObject({ requests: 3, least_loaded_share: 0, mean: 7 });
  });

  test("depth counts survive the table's growth: the least depth after it is still right", () => {
    const view = new OracleView(2, 16, timing);
    const none = new BigUint64Array(0);
    view.dispatched(1); // rank 1 at 1
    for (let i = 0; i < 20; i++) view.dispatched(0); // rank 0 at 20: the table grows past 16
    view.completed(1);
    view.dispatched(1);
    view.dispatched(1); // rank 1 at 2, rank 0 at 20: the least is 2
    view.judge(0, none, 16); // 18 extra
    expect(view.summary().load).toMatchObject({ requests: 1, mean: 18 });
  });
});
