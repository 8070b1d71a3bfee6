import { describe, expect, test } from "bun:test";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { ROUTING_CASES, TABLE_BLOCK_SIZE } from "../../../test/routing/decision-table.ts";
import { KvIndex } from "../index/kv-index.ts";
import { createRng } from "../random/rng.ts";
import { longerPrefixRank } from "./hints.ts";
import { DISK_OVERLAP_WEIGHT, HOST_OVERLAP_WEIGHT, kvCost, uncachedPromptTokens } from "./kv-cost.ts";
import { OVERLOADED, type RouteDecision, type RouteQuery, type RouterOptions } from "./router-options.ts";
import { Router } from "./router.ts";
import { selectByCost } from "./worker-selection.ts";

const BS = 64;
const kvOpts: RouterOptions = { mode: "kv" };

function routerWith(n: number, ix: KvIndex, opts: RouterOptions = kvOpts, capacity = 1000, ranks = 1): Router {
  const r = new Router(opts, createRng(0), ix);
  for (let s = 0; s < n; s++) r.add(s, { capacityBlocks: capacity, worker: s - (s % ranks), maxNumBatchedTokens: 100 });
  return r;
}

/** A prompt of `blocks` full blocks: the shared prefix `prefix` (hashes 1000·p + i) then its own blocks. */
function prompt(prefix: number, prefixBlocks: number, own: number, ownBlocks: number, extraTokens = 0): RouteQuery {
  const seqHashes: bigint[] = [];
  for (let i = 0; i < prefixBlocks; i++) seqHashes.push(BigInt(1000 * prefix + i));
  for (let i = 0; i < ownBlocks; i++) seqHashes.push(BigInt(1_000_000 + 1000 * own + i));
  return { seqHashes, promptTokens: (prefixBlocks + ownBlocks) * BS + extraTokens, blockSize: BS };
}

function decided(d: ReturnType<Router["route"]>): RouteDecision {
  if (d === undefined || d === OVERLOADED) throw new Error(`no decision: ${d}`);
  return d;
}

const deviceHolds = (ix: KvIndex, rankId: number, q: RouteQuery, blocks: number) =>
  ix.apply(rankId, { kind: "stored", tier: "device", blockHashes: Array.from(q.seqHashes).slice(0, blocks) });

describe("kv cost", () => {
  const c = { promptTokens: 640, blockSize: 64, device: 4, host: 4, disk: 0, activeBlocks: 7, activePrefillTokens: 0, newBlocks: 10 };
  test("prefill (fractional blocks) after the overlap credit, plus active and new blocks", () => {
    expect(HOST_OVERLAP_WEIGHT).toBe(0.75);
    expect(DISK_OVERLAP_WEIGHT).toBe(0.25);
    expect(kvCost(c)).toBe(10 - 4 - 3 + 7 + 10);
    expect(kvCost({ ...c, promptTokens: 650 })).toBe(650 / 64 - 4 - 3 + 7 + 10);
    expect(kvCost({ ...c, activePrefillTokens: 128 })).toBe(12 - 7 + 17);
    expect(kvCost({ ...c, host: 0, disk: 4 })).toBe(10 - 4 - 1 + 17);
    expect(kvCost(c, { prefillLoadScale: 2, overlapCredit: 1, host: 0.75, disk: 0.25 })).toBe(2 * 3 + 17);
    expect(kvCost(c, { prefillLoadScale: 1, overlapCredit: 0.5, host: 0.75, disk: 0.25 })).toBe(10 - 2 - 3 + 17);
    expect(kvCost({ ...c, device: 10, host: 10 })).toBe(17); // never negative prefill
  });

  test("a request's outstanding prefill is its prompt less the weighted overlap, credit aside", () => {
    expect(uncachedPromptTokens(640, 64, 4, 2, 1)).toBe(640 - Math.round((4 + 1.5 + 0.25) * 64));
    expect(uncachedPromptTokens(100, 64, 2, 0, 0)).toBe(0);
  });
});

describe("worker selection", () => {
  test("lowest cost wins", () => {
    const rng = createRng(1);
    expect(selectByCost([5, 3, 4], 3, rng)).toBe(1);
  });

  test("exact ties go uniformly at random", () => {
    const rng = createRng(1);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 3000; i++) counts[selectByCost([3, 3, 4, 3], 4, rng)]!++;
    expect(counts[2]).toBe(0);
    for (const k of [0, 1, 3]) expect(Math.abs(counts[k]! - 1000)).toBeLessThan(120);
  });

  test("temperature T samples p ∝ exp(−(c − min) / ((max − min) × T))", () => {
    const rng = createRng(2);
    const costs = [0, 5, 10];
    const n = 30_000;
    const counts = [0, 0, 0];
    for (let i = 0; i < n; i++) counts[selectByCost(costs, 3, rng, 0.5)]!++;
    const w = costs.map((c) => Math.exp(-(c - 0) / (10 * 0.5)));
    const total = w[0]! + w[1]! + w[2]!;
    costs.forEach((_, k) => expect(Math.abs(counts[k]! / n - w[k]! / total)).toBeLessThan(0.01));
  });

  test("with a temperature, equal costs are sampled uniformly", () => {
    const rng = createRng(2);
    const flat = [0, 0];
    for (let i = 0; i < 2000; i++) flat[selectByCost([7, 7], 2, rng, 0.5)]!++;
    expect(Math.abs(flat[0]! - 1000)).toBeLessThan(100);
  });
});

describe("router", () => {
  const q = prompt(1, 1, 1, 0);

  test("round-robin cycles over the candidates", () => {
    const rr = routerWith(3, new KvIndex(), { mode: "round-robin" });
    expect([0, 1, 2, 3].map(() => decided(rr.route(q)).rankId)).toEqual([0, 1, 2, 0]);
  });

  test("random picks every candidate and nothing else", () => {
    const rnd = routerWith(3, new KvIndex(), { mode: "random" });
    expect(new Set(Array.from({ length: 100 }, () => decided(rnd.route(q)).rankId))).toEqual(new Set([0, 1, 2]));
  });

  test("no candidates → undefined", () => {
    expect(new Router({ mode: "kv" }, createRng(0), new KvIndex()).route(q)).toBeUndefined();
  });

  test("a removed candidate is never picked, while its requests' load stays until they finish", () => {
    const r = routerWith(3, new KvIndex(), { mode: "round-robin" });
    const held = Array.from({ length: 3 }, () => decided(r.route(prompt(1, 4, 1, 0))));
    r.remove(1);
    expect(r.has(1)).toBe(false);
    expect(new Set(Array.from({ length: 10 }, () => decided(r.route(q)).rankId))).toEqual(new Set([0, 2]));
    r.add(1, { capacityBlocks: 10, worker: 1 });
    expect(r.activeBlocksOf(1)).toBe(4); // its request is still in flight (the frontend fails it at once)
    for (const d of held) r.finish(d.request);
    expect(r.activeBlocksOf(1)).toBe(0);
  });

  test("each decision reads only its own prompt's active prefixes (the last walk's are cleared): an unrelated prompt goes to the idle rank", () => {
    for (let round = 0; round < 8; round++) {
      const r = routerWith(3, new KvIndex());
      const p = prompt(1, 8, 1, 0);
      const a = decided(r.route(p)).rankId;
      const b = decided(r.route(p)).rankId; // this walk finds p active on a
      // An unrelated prompt: the loaded ranks have nothing of it active, so an idle one wins.
      const idle = [0, 1, 2].filter((s) => s !== a && s !== b);
      expect(idle).toContain(decided(r.route(prompt(2, 8, 2, 0))).rankId);
    }
  });

  test("after finished requests an unrelated prompt is a tie between all ranks, whatever the last walk saw", () => {
    const picks = new Set<number>();
    for (let seed = 0; seed < 12; seed++) {
      const r = new Router(kvOpts, createRng(seed), new KvIndex());
      for (let s = 0; s < 3; s++) r.add(s, { capacityBlocks: 1000, worker: s, maxNumBatchedTokens: 100 });
      const p = prompt(1, 8, 1, 0);
      const a = decided(r.route(p));
      const b = decided(r.route(p)); // this walk sees p active where a went
      r.finish(a.request);
      r.finish(b.request);
      picks.add(decided(r.route(prompt(2, 8, 2, 0))).rankId);
    }
    expect(picks.size).toBeGreaterThan(1);
  });

  test("removing candidates from the middle and then the moved last one leaves only the rest routed", () => {
    const r = routerWith(3, new KvIndex(), { mode: "round-robin" });
    r.remove(0); // rank 2 takes its place
    r.remove(2);
    expect([0, 1, 2].map((s) => r.has(s))).toEqual([false, true, false]);
    expect(new Set(Array.from({ length: 6 }, () => decided(r.route(q)).rankId))).toEqual(new Set([1]));
  });

  test("saturated: with a queue threshold, true once every candidate's outstanding prefill is above its share (one candidate too)", () => {
    const one = new Router({ mode: "round-robin", queueThreshold: 1 }, createRng(0), new KvIndex());
    expect(one.saturated()).toBe(false); // no candidates
    one.add(0, { capacityBlocks: 1000, worker: 0, maxNumBatchedTokens: 100 });
    expect(one.saturated()).toBe(false);
    decided(one.route(prompt(1, 1, 1, 1))); // 128 prefill tokens > 1 × 100
    expect(one.saturated()).toBe(true);
  });

  test("busy by share of max_num_batched_tokens also for a candidate that batches a single token", () => {
    const r = new Router({ mode: "round-robin", busy: { activePrefillTokensFrac: 2 } }, createRng(0), new KvIndex());
    r.add(0, { capacityBlocks: 1000, worker: 0, maxNumBatchedTokens: 1 });
    r.track(0, [], 3); // 3 prefill tokens > 2 × 1
    expect(r.isBusy(0)).toBe(true);
  });

  test("a request's distinct blocks count as active until finish, its prefill tokens until its first token", () => {
    const r = routerWith(1, new KvIndex());
    const a = decided(r.route(prompt(1, 64, 1, 2)));
    const b = decided(r.route(prompt(1, 64, 2, 2)));
    expect(r.activeBlocksOf(0)).toBe(64 + 2 + 2);
    expect(b.newBlocks).toBe(2); // 64 of its 66 blocks were already active
    expect(r.activePrefillTokensOf(0)).toBe(2 * 66 * BS);
    r.firstToken(a.request);
    r.firstToken(a.request); // idempotent
    expect(r.activePrefillTokensOf(0)).toBe(66 * BS);
    r.finish(b.request); // a cancelled request: prefill and blocks both go
    expect([r.activePrefillTokensOf(0), r.activeBlocksOf(0)]).toEqual([0, 66]);
    r.finish(a.request);
    r.finish(a.request);
    expect(r.activeBlocksOf(0)).toBe(0);
  });

  test("the warm worker wins against a cold one with less in flight (74 against 264 blocks)", () => {
    // 4,096-token prefixes + 128 own tokens = 66 blocks. Worker 0 holds prefix P and gets 3
    // requests for P; worker 1 holds prefixes Q and R and gets one request for each (first tokens out).
    const ix = new KvIndex();
    const r = routerWith(2, ix);
    const p = prompt(7, 64, 0, 2);
    deviceHolds(ix, 0, p, 64);
    deviceHolds(ix, 1, prompt(8, 64, 0, 0), 64);
    deviceHolds(ix, 1, prompt(9, 64, 0, 0), 64);
    const load = (rankId: number, q: RouteQuery) => {
      const d = decided(r.route(q));
      expect(d.rankId).toBe(rankId);
      r.firstToken(d.request);
    };
    for (let k = 1; k <= 3; k++) load(0, prompt(7, 64, k, 2));
    load(1, prompt(8, 64, 4, 2));
    load(1, prompt(9, 64, 5, 2));
    expect([r.activeBlocksOf(0), r.activeBlocksOf(1)]).toEqual([70, 132]);
    const d = decided(r.route(p));
    // Warm: prefill 66 − 64 = 2, decode 70 active + 2 new. Cold: 66 + 132 + 66 (the old model
    // charged the warm worker 2 + 3 × 66 = 200 and the cold one 66 + 2 × 66 = 198).
    expect(d).toMatchObject({ rankId: 0, cost: 74, prefillBlocks: 2, deviceOverlap: 64, activeBlocks: 70, newBlocks: 2 });
    expect(kvCost({ promptTokens: 66 * BS, blockSize: BS, device: 0, host: 0, disk: 0, activeBlocks: 132, activePrefillTokens: 0, newBlocks: 66 })).toBe(264);
  });

  test("the cold worker wins exactly where the formula crosses over", () => {
    // Warm worker 0 holds 64 blocks of P, cold worker 1 holds its first block. Each P request
    // (130 own tokens: 2 full blocks + 2) adds 2 active blocks to worker 0; with first tokens out,
    // worker 0 costs 2.03 + (64 + 2k) + 2 and worker 1 costs 65.03 + 66: worker 1 wins at k = 32.
    const ix = new KvIndex();
    const r = routerWith(2, ix);
    deviceHolds(ix, 0, prompt(7, 64, 0, 0), 64);
    deviceHolds(ix, 1, prompt(7, 64, 0, 0), 1);
    const warm = (k: number) => (66 * 64 + 2) / 64 - 64 + (k === 0 ? 66 : 64 + 2 * k + 2);
    const cold = (66 * 64 + 2) / 64 - 1 + 66;
    const expectedFlip = Array.from({ length: 100 }, (_, k) => k).find((k) => warm(k) > cold)!;
    expect(expectedFlip).toBe(32);
    let k = 0;
    for (;;) {
      const d = decided(r.route(prompt(7, 64, k + 1, 2, 2)));
      r.firstToken(d.request);
      if (d.rankId === 1) break;
      expect(d.cost).toBeCloseTo(warm(k), 9);
      k++;
    }
    expect(k).toBe(expectedFlip);
  });

  describe("siblings sharing a 64-block prefix, with no KV events", () => {
    const p = (k: number) => prompt(7, 64, k, 2);
    // First tokens out between requests, so only the decode term differs.
    const siblings = (r: Router) =>
      Array.from({ length: 4 }, (_, k) => {
        const d = decided(r.route({ ...p(k), nowMs: k }));
        r.firstToken(d.request);
        return d.rankId;
      });

    test("they spread over the candidates", () => {
      expect(new Set(siblings(routerWith(4, new KvIndex())))).toEqual(new Set([0, 1, 2, 3]));
    });

    test("in approximate mode they co-locate", () => {
      const approx = siblings(routerWith(4, new KvIndex(), { mode: "kv", approximateTtlMs: 1000 }));
      expect(new Set(approx).size).toBe(1);
    });

    test("a true burst (no first token yet) spreads even in approximate mode, its prefill being outstanding", () => {
      const burst = routerWith(4, new KvIndex(), { mode: "kv", approximateTtlMs: 1000 });
      expect(new Set(Array.from({ length: 4 }, (_, k) => decided(burst.route({ ...p(k), nowMs: 0 })).rankId))).toEqual(new Set([0, 1, 2, 3]));
    });
  });

  test("approximate mode: a decision's blocks expire after the TTL unless written again", () => {
    const ix = new KvIndex();
    const r = routerWith(2, ix, { mode: "kv", approximateTtlMs: 100 });
    const d = decided(r.route({ ...prompt(1, 4, 1, 0), nowMs: 0 }));
    r.finish(d.request);
    expect(ix.footprint(d.rankId)).toBe(4);
    const again = decided(r.route({ ...prompt(1, 2, 2, 0), nowMs: 60 })); // blocks 0, 1 written again
    r.finish(again.request);
    expect(again.rankId).toBe(d.rankId);
    r.route({ ...prompt(9, 1, 9, 0), nowMs: 100 }); // expiry runs before each decision
    expect(ix.blocksOf(d.rankId, "device").sort()).toEqual([1000n, 1001n]);
    r.route({ ...prompt(9, 1, 9, 0), nowMs: 160 });
    expect(ix.footprint(d.rankId)).toBe(ix.blocksOf(d.rankId, "device").filter((h) => h === 9000n).length);
  });

  test("busy thresholds skip a worker only when all its ranks are busy, and overload the router when all are", () => {
    // 2 workers × 2 ranks, 100 G1 blocks each, busy above 10 % of G1.
    const r = routerWith(4, new KvIndex(), { mode: "kv", busy: { activeDecodeBlocks: 0.1 } }, 100, 2);
    const big = (k: number) => prompt(k, 11, k, 0);
    const first = decided(r.route(big(1)));
    expect(r.isBusy(first.rankId)).toBe(true);
    // Its sibling rank is idle: the worker stays, so all four ranks can still be chosen.
    const seen = new Set<number>([first.rankId]);
    for (let k = 2; k <= 4; k++) seen.add(decided(r.route(big(k))).rankId);
    expect(seen).toEqual(new Set([0, 1, 2, 3]));
    expect(r.route(big(5))).toBe(OVERLOADED);
    expect(r.rejected).toBe(1);
  });

  test("busy on outstanding prefill tokens, absolute or as a share of max_num_batched_tokens, strict >", () => {
    const abs = routerWith(1, new KvIndex(), { mode: "round-robin", busy: { activePrefillTokens: 128 } });
    const d = decided(abs.route(prompt(1, 2, 1, 0)));
    expect(abs.isBusy(0)).toBe(false); // 128 is not > 128
    decided(abs.route(prompt(2, 1, 2, 0)));
    expect(abs.route(prompt(3, 1, 3, 0))).toBe(OVERLOADED);
    abs.firstToken(d.request);
    expect(abs.isBusy(0)).toBe(false);
    const frac = routerWith(1, new KvIndex(), { mode: "random", busy: { activePrefillTokensFrac: 1 } });
    decided(frac.route({ seqHashes: [], promptTokens: 101, blockSize: BS })); // max_num_batched_tokens 100
    expect(frac.route(q)).toBe(OVERLOADED);
  });

  test("equal costs spread over the candidates", () => {
    const r = routerWith(4, new KvIndex());
    const seen = new Set<number>();
    for (let i = 0; i < 40; i++) {
      const d = decided(r.route(prompt(9, 1, 0, 0)));
      seen.add(d.rankId);
      r.finish(d.request);
    }
    expect(seen).toEqual(new Set([0, 1, 2, 3]));
  });
});

describe("index", () => {
  /** An index holding block 1 on rank 0's device tier and block 2 on its host tier. */
  function bothTiers(): KvIndex {
    const ix = new KvIndex();
    ix.apply(0, { kind: "stored", tier: "device", blockHashes: [1n] });
    ix.apply(0, { kind: "stored", tier: "host", blockHashes: [2n] });
    return ix;
  }

  test("a cleared router event clears one tier", () => {
    const ix = bothTiers();
    ix.apply(0, { kind: "cleared", tier: "host" });
    expect([ix.footprint(0, "device"), ix.footprint(0, "host")]).toEqual([1, 0]);
  });

  test("an engine cleared (no tier) clears all", () => {
    const ix = bothTiers();
    ix.apply(0, { kind: "cleared" });
    expect(ix.footprint(0, "device")).toBe(0);
  });

  test("a store whose parent the rank does not hold (in any tier) is dropped and counted", () => {
    const ix = new KvIndex();
    ix.apply(0, { kind: "stored", tier: "device", blockHashes: [1n], parentHash: null });
    ix.apply(0, { kind: "stored", tier: "host", blockHashes: [2n], parentHash: 1n });
    ix.apply(0, { kind: "stored", tier: "device", blockHashes: [3n], parentHash: 2n });
    ix.apply(1, { kind: "stored", tier: "device", blockHashes: [4n], parentHash: 3n }); // rank 1 holds no 3
    expect([ix.footprint(0, "device"), ix.footprint(0, "host"), ix.footprint(1, "device")]).toEqual([2, 1, 0]);
    expect(ix.orphanStores).toBe(1);
  });
});

describe("the shared decision table (same cases run through the frontend)", () => {
  const hasher = createBlockHasher();
  for (const c of ROUTING_CASES) {
    test(c.name, () => {
      const tokens = Uint32Array.from({ length: 16 * TABLE_BLOCK_SIZE }, (_, i) => 1000 + i);
      const seq = hasher.hashBlocks(tokens, TABLE_BLOCK_SIZE).sequence;
      const ix = new KvIndex();
      for (const h of c.holdings) ix.apply(h.worker * c.ranks + h.rank, { kind: "stored", tier: h.tier, blockHashes: [...seq.subarray(h.from, h.to)] });
      const r = routerWith(c.workers * c.ranks, ix);
      const d = decided(r.route({ seqHashes: seq.subarray(0, c.promptBlocks), promptTokens: c.promptBlocks * TABLE_BLOCK_SIZE, blockSize: TABLE_BLOCK_SIZE }));
      expect({ worker: Math.floor(d.rankId / c.ranks), rank: d.rankId % c.ranks }).toEqual(c.expect);
    });
  }
});

describe("router hints", () => {
  test("a rank with a strictly longer local prefix (device + host), the longest first", () => {
    const ix = new KvIndex();
    ix.apply(1, { kind: "stored", tier: "device", blockHashes: [1n, 2n] });
    ix.apply(2, { kind: "stored", tier: "device", blockHashes: [1n] });
    ix.apply(2, { kind: "stored", tier: "host", blockHashes: [2n, 3n] });
    const seq = [1n, 2n, 3n, 4n];
    expect(longerPrefixRank(ix, seq, 2, [1, 2])).toEqual({ rankId: 2, blocks: 3 });
    expect(longerPrefixRank(ix, seq, 3, [1, 2])).toBeUndefined(); // equal is not longer
    expect(longerPrefixRank(ix, seq, 0, [])).toBeUndefined();
  });
});
