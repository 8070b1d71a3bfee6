import { describe, expect, test } from "bun:test";
import { polynomialPrefillMs } from "../../core/timing/timing-model.ts";
import type { Residency, ResidencyHolder } from "../../protocol/residency.ts";
import { liveRegret, type RegretRequest, type TruthSample } from "./regret.ts";

const H = [11n, 22n, 33n, 44n, 55n, 66n, 77n, 88n];
const blocks = (hs: bigint[]) => hs.map((h) => ({ seq_hash: String(h), local_hash: String(h + 1000n) }));
const holder = (worker_id: string, device: bigint[], host: bigint[] = [], dp_rank = 0): ResidencyHolder => ({ worker_id, dp_rank, tiers: { device: blocks(device), host: blocks(host), disk: [] } });
const truth = (...sources: ResidencyHolder[]): Residency => ({ sources });
const req = (start_s: number, worker_id: string, seq_hashes = H, dp_rank = 0): RegretRequest => ({ start_s, seq_hashes, worker_id, dp_rank });
const timing = { timingModel: "polynomial", prefillMs: 20, maxNumBatchedTokens: 8192 } as const;

describe("live regret", () => {
  test("a single-worker stack has no regret", () => {
    const samples: TruthSample[] = [0, 1, 2].map((t) => ({ t_s: t, truth: truth(holder("w0", H.slice(0, t * 3))), load: { "w0/0": t } }));
    const s = liveRegret([req(0.5, "w0"), req(1.5, "w0"), req(2.5, "w0")], samples, 16, timing);
    expect(s).toEqual({ requests: 3, best_cache_share: 1, mean_blocks: 0, p99_blocks: 0, mean_prefill_ms: 0, p99_prefill_ms: 0, histogram: [{ bucket_blocks: 0, count: 3 }], interval_s: 1, skipped_requests: 0, load: { unit: "requests waiting or running on the rank, as sampled", requests: 3, least_loaded_share: 1, mean: 0, p99: 0 } });
  });

  test("the index was stale: truth says B holds the prefix, the request went to A", () => {
    const samples: TruthSample[] = [{ t_s: 10, truth: truth(holder("A", []), holder("B", H)), load: { "A/0": 3, "B/0": 1 } }];
    const s = liveRegret([{ ...req(10.2, "A"), prompt_tokens: 8 * 16 + 5 }], samples, 16, timing);
    expect(s).toMatchObject({ requests: 1, best_cache_share: 0, mean_blocks: 8, p99_blocks: 8, load: { least_loaded_share: 0, mean: 2 } });
    expect(s.mean_prefill_ms).toBeCloseTo(polynomialPrefillMs(133) - polynomialPrefillMs(5), 9);
    expect(s.histogram.at(-1)).toEqual({ bucket_blocks: 8, count: 1 });
  });

  test("each request is judged on the nearest sample at or before its start; earlier ones are skipped", () => {
    const samples: TruthSample[] = [
      // Out of order on purpose: sorted by time first.
      { t_s: 2, truth: truth(holder("A", H), holder("B", [])) },
      { t_s: 1, truth: truth(holder("A", []), holder("B", H.slice(0, 4))) },
      { t_s: 3, truth: truth(holder("A", H.slice(0, 2)), holder("B", H.slice(0, 2), H.slice(2, 6))) },
    ];
    const s = liveRegret(
      [
        req(0.9, "A"), // before every sample: skipped
        req(1, "A"), // sample 1 (at its start): B held 4 → 4
        req(1.99, "B"), // sample 1: best → 0
        req(2.5, "B"), // sample 2: A held 8 → 8
        req(7, "A"), // sample 3: B holds 2 device + 4 host = 6, A 2 → 4
        req(7, "C"), // a worker the truth does not list holds nothing → 6
      ],
      samples,
      16,
    );
    expect(s.skipped_requests).toBe(1);
    expect(s.requests).toBe(5);
    expect(s.best_cache_share).toBe(0.2);
    expect(s.mean_blocks).toBe((4 + 0 + 8 + 4 + 6) / 5);
    expect(s.histogram).toEqual([
      { bucket_blocks: 0, count: 1 },
      { bucket_blocks: 1, count: 0 },
      { bucket_blocks: 2, count: 0 },
      { bucket_blocks: 4, count: 3 },
      { bucket_blocks: 8, count: 1 },
    ]);
    expect(s.interval_s).toBe(1);
    // No timing: no prefill times; no load sampled: no load regret.
    expect(s.mean_prefill_ms).toBeUndefined();
    expect(s.load).toBeUndefined();
  });

  test("ranks are told apart; load only where the chosen (worker, rank) was sampled", () => {
    const samples: TruthSample[] = [{ t_s: 0, truth: truth(holder("W", [], [], 0), holder("W", H, [], 1)), load: { "W/1": 0, "W/2": 5 } }];
    const s = liveRegret([req(1, "W", H, 0), req(1, "W", H, 1), req(1, "W", H, 2)], samples, 16);
    expect(s.mean_blocks).toBe((8 + 0 + 8) / 3);
    expect(s.load).toMatchObject({ requests: 2, least_loaded_share: 0.5, mean: 2.5 });
  });

  test("no requests or no samples: an empty summary", () => {
    expect(liveRegret([], [], 16)).toMatchObject({ requests: 0, best_cache_share: 1, mean_blocks: 0, histogram: [], interval_s: 0, skipped_requests: 0 });
    expect(liveRegret([req(1, "A")], [], 16)).toMatchObject({ requests: 0, skipped_requests: 1 });
  });

  test("bad inputs are refused, naming the field", () => {
    const ok: TruthSample[] = [{ t_s: 0, truth: truth(holder("A", H)) }];
    expect(() => liveRegret([req(1, "A")], ok, 0)).toThrow("liveRegret: blockSize must be an integer ≥ 1, got 0");
    expect(() => liveRegret([req(1, "A")], ok, 1.5)).toThrow(RangeError);
    expect(() => liveRegret([req(Number.NaN, "A")], ok, 16)).toThrow("liveRegret: requests[0].start_s must be a finite number, got NaN");
    expect(() => liveRegret([req(1, "A", H, -1)], ok, 16)).toThrow("liveRegret: requests[0].dp_rank must be an integer ≥ 0, got -1");
    expect(() => liveRegret([req(1, "A")], [...ok, { t_s: Infinity, truth: truth() }], 16)).toThrow("liveRegret: samples[1].t_s must be a finite number, got Infinity");
  });
});
