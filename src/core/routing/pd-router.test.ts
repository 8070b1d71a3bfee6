// The router's settings for disaggregated serving: a prefill pool that counts no active blocks
// (overlap and outstanding prefill only), and decode legs routed on load alone (credit 0, no
// prefill tokens counted), as Dynamo's prefill router sets its two routers.
import { describe, expect, test } from "bun:test";
import { KvIndex } from "../index/kv-index.ts";
import { createRng } from "../random/rng.ts";
import { OVERLOADED, type RouteDecision, type RouteQuery, type RouterOptions } from "./router-options.ts";
import { Router } from "./router.ts";

const BS = 16;

function routerWith(n: number, ix: KvIndex, opts: RouterOptions): Router {
  const r = new Router(opts, createRng(0), ix);
  for (let s = 0; s < n; s++) r.add(s, { capacityBlocks: 1000, worker: s, maxNumBatchedTokens: 100 });
  return r;
}

function prompt(tag: number, blocks: number): RouteQuery {
  const seqHashes = Array.from({ length: blocks }, (_, i) => BigInt(tag * 1000 + i));
  return { seqHashes, promptTokens: blocks * BS, blockSize: BS };
}

function decided(d: ReturnType<Router["route"]>): RouteDecision {
  if (d === undefined || d === OVERLOADED) throw new Error(`no decision: ${String(d)}`);
  return d;
}

describe("prefill pool (trackActiveBlocks false)", () => {
  test("counts the request's prefill tokens but none of its blocks", () => {
    const ix = new KvIndex();
    const r = routerWith(2, ix, { mode: "kv", trackActiveBlocks: false });
    const d = decided(r.route(prompt(1, 8)));
    expect(r.activeBlocksOf(d.rankId)).toBe(0);
    expect(r.activePrefillTokensOf(d.rankId)).toBe(8 * BS);
    r.finish(d.request);
    expect(r.activePrefillTokensOf(d.rankId)).toBe(0);
  });

  test("picks by overlap, then by outstanding prefill, never by decode load", () => {
    const shared = prompt(2, 6);
    // Prompts sharing a 6-block prefix rank 1 holds, each with 2 blocks of its own.
    const q = (k: number): RouteQuery => ({ seqHashes: [...Array.from(shared.seqHashes), BigInt(90_000 + 2 * k), BigInt(90_001 + 2 * k)], promptTokens: 8 * BS, blockSize: BS });
    const pools = (opts: RouterOptions) => {
      const ix = new KvIndex();
      ix.apply(1, { kind: "stored", tier: "device", blockHashes: Array.from(shared.seqHashes) });
      const r = routerWith(2, ix, opts);
      const ranks: number[] = [];
      for (let k = 0; k < 6; k++) {
        const d = decided(r.route(q(k)));
        r.firstToken(d.request); // prefill done: only the decode load stays
        ranks.push(d.rankId);
      }
      return ranks;
    };
    // The prefill pool keeps every prompt on the rank that holds the prefix...
    expect(pools({ mode: "kv", trackActiveBlocks: false })).toEqual([1, 1, 1, 1, 1, 1]);
    // ...where an aggregated router moves off it once its active blocks outweigh the overlap.
    expect(pools({ mode: "kv" })).toContain(0);
    // No overlap anywhere: the rank with outstanding prefill loses.
    const r = routerWith(2, new KvIndex(), { mode: "kv", trackActiveBlocks: false });
    const a = decided(r.route(prompt(3, 4)));
    const b = decided(r.route(prompt(4, 4)));
    expect(a.rankId).not.toBe(b.rankId);
  });
});

describe("decode legs (overlap credit 0, prefill untracked)", () => {
  test("overlap does not attract a decode leg: the less loaded rank wins", () => {
    const ix = new KvIndex();
    const r = routerWith(2, ix, { mode: "kv" });
    const q = prompt(5, 8);
    ix.apply(0, { kind: "stored", tier: "device", blockHashes: Array.from(q.seqHashes) });
    const other = decided(r.route({ ...prompt(6, 4), exclude: new Set([1]) }));
    expect(other.rankId).toBe(0);
    // With the credit, rank 0's cached prompt outweighs its 4 active blocks; without, it loses.
    const credited = decided(r.route(q));
    expect(credited.rankId).toBe(0);
    r.finish(credited.request);
    const leg = decided(r.route({ ...q, overlapCredit: 0, trackPrefillTokens: false }));
    expect(leg.rankId).toBe(1);
    expect(r.activePrefillTokensOf(1)).toBe(0);
    expect(r.activeBlocksOf(1)).toBe(8);
  });

  test("an override leaves the router's own credit for the next request", () => {
    const ix = new KvIndex();
    const r = routerWith(2, ix, { mode: "kv" });
    const q = prompt(7, 8);
    ix.apply(1, { kind: "stored", tier: "device", blockHashes: Array.from(q.seqHashes) });
    decided(r.route({ ...prompt(8, 2), exclude: new Set([0]) }));
    const d = decided(r.route({ ...q, overlapCredit: 0 }));
    expect(d.rankId).toBe(0);
    expect(d.prefillBlocks).toBe(8);
    expect(decided(r.route(q)).rankId).toBe(1);
  });
});
