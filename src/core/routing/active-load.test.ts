// The active-load tracker against a naive model (per rank, a multiset of every in-flight
// prompt's blocks): distinct active blocks and the longest active prefix of any prompt agree after
// every step, whatever the order of routing and finishing. Prompts are drawn from a small tree of
// shared prefixes so that deferred tails are reached, indexed and released in every order.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { RankSet } from "../index/tier-index.ts";
import { ActiveLoad, type ActiveRequest } from "./active-load.ts";

/** A prompt: a path in a tree of blocks; block i's hash names its whole prefix (as sequence hashes). */
function hashesOf(path: readonly number[]): bigint[] {
  const out: bigint[] = [];
  let h = 0n;
  for (const step of path) {
    h = (h * 31n + BigInt(step) + 1n) & 0xffff_ffff_ffff_ffffn;
    out.push(h);
  }
  return out;
}

type Op = { kind: "add"; rankId: number; path: number[]; walk: "router" | "own" } | { kind: "finish"; pick: number } | { kind: "query"; path: number[] };

const path = fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 0, maxLength: 8 });
const op: fc.Arbitrary<Op> = fc.oneof(
  // "router": walked with the candidates as the cover and `held` passed on, as Router does; "own": add() walks itself.
  fc.record({ kind: fc.constant("add" as const), rankId: fc.integer({ min: 0, max: 2 }), path, walk: fc.constantFrom("router" as const, "own" as const) }),
  fc.record({ kind: fc.constant("finish" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("query" as const), path }),
);

function naivePrefix(inflight: { rankId: number; hashes: bigint[] }[], rankId: number, q: bigint[]): number {
  const held = new Set(inflight.filter((r) => r.rankId === rankId).flatMap((r) => r.hashes));
  let k = 0;
  while (k < q.length && held.has(q[k]!)) k++;
  return k;
}

describe("active load", () => {
  test("matches a naive multiset model under any order of adds, finishes and queries", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const load = new ActiveLoad();
        const cover = new RankSet();
        for (let s = 0; s < 3; s++) {
          load.reserve(s);
          cover.add(s);
        }
        const inflight: { rankId: number; hashes: bigint[]; req: ActiveRequest }[] = [];
        const check = (q: bigint[]) => {
          const depth = load.beginPrefixes(q, q.length).device;
          const got = [0, 1, 2].map((s) => depth[s]!);
          load.endPrefixes();
          expect(got).toEqual([0, 1, 2].map((s) => naivePrefix(inflight, s, q)));
          for (let s = 0; s < 3; s++) expect(load.activeBlocks(s)).toBe(new Set(inflight.filter((r) => r.rankId === s).flatMap((r) => r.hashes)).size);
        };
        for (const o of ops) {
          if (o.kind === "add") {
            const hashes = hashesOf(o.path);
            check(hashes);
            let req: ActiveRequest;
            if (o.walk === "router") {
              const walk = load.beginPrefixes(hashes, hashes.length, cover);
              const held = Math.max(walk.device[o.rankId]!, walk.floor);
              load.endPrefixes();
              expect(held).toBe(naivePrefix(inflight, o.rankId, hashes));
              req = load.addWalked(o.rankId, walk, held, 10);
            } else req = load.add(o.rankId, hashes, 10);
            inflight.push({ rankId: o.rankId, hashes, req });
          } else if (o.kind === "finish" && inflight.length > 0) {
            const [r] = inflight.splice(o.pick % inflight.length, 1);
            load.finish(r!.req);
            load.finish(r!.req); // idempotent
          } else if (o.kind === "query") check(hashesOf(o.path));
        }
        for (const r of inflight.splice(0)) load.finish(r.req);
        check([]);
        expect([0, 1, 2].map((s) => load.activeBlocks(s))).toEqual([0, 0, 0]);
      }),
      { numRuns: 400 },
    );
  });

  test("a stale held prefix is refused and changes nothing", () => {
    const load = new ActiveLoad();
    const h = hashesOf([0, 0, 0]);
    const walk = load.beginPrefixes(h, h.length);
    load.endPrefixes();
    expect(() => load.addWalked(0, walk, 2, 0)).toThrow(/does not hold block 1/);
    expect(load.activeBlocks(0)).toBe(0);
    const r = load.add(0, h, 0);
    expect(load.activeBlocks(0)).toBe(3);
    load.finish(r);
    expect(load.activeBlocks(0)).toBe(0);
  });

  test("a walk taken before the last add or finish is refused and changes nothing", () => {
    const load = new ActiveLoad();
    const h = hashesOf([0, 1]);
    const stale = load.beginPrefixes(h, h.length);
    load.endPrefixes();
    const first = load.addWalked(0, stale, 0, 0);
    expect(() => load.addWalked(1, stale, 0, 0)).toThrow(/stale walk/);
    expect([load.activeBlocks(0), load.activeBlocks(1)]).toEqual([2, 0]);
    const fresh = load.beginPrefixes(h, h.length);
    load.endPrefixes();
    load.finish(first);
    expect(() => load.addWalked(1, fresh, 0, 0)).toThrow(/stale walk/);
    expect(load.activeBlocks(1)).toBe(0);
  });

  test("a private tail is counted without being indexed until a sibling reaches it, and only as far as the sibling follows it", () => {
    const load = new ActiveLoad();
    const a = hashesOf([0, 0, 0, 0, 0, 0]);
    load.beginPrefixes(a, a.length);
    load.endPrefixes();
    const r = load.add(0, a, 0);
    expect([r.indexed, load.activeBlocks(0)]).toEqual([1, 6]); // block 0 indexed, 5 counted
    const b = hashesOf([0, 0, 0, 1]); // shares a's first 3 blocks
    expect(load.beginPrefixes(b, b.length).device[0]).toBe(3);
    load.endPrefixes();
    expect(r.indexed).toBe(3); // b leaves a after block 2: blocks 3..5 stay a's private tail
    load.add(1, b, 0);
    expect([load.activeBlocks(0), load.activeBlocks(1)]).toEqual([6, 4]);
    const c = hashesOf([0, 0, 0, 0, 0]); // follows a further
    expect(load.beginPrefixes(c, c.length).device[0]).toBe(5);
    load.endPrefixes();
    expect(r.indexed).toBe(5);
    load.finish(r);
    expect(load.activeBlocks(0)).toBe(0);
  });
});

describe("active load: rank ids and prefill-only requests", () => {
  test("prefill tokens are kept per rank id, also ids at and past the arrays' first sizes", () => {
    const load = new ActiveLoad();
    const ids = [0, 15, 16, 17, 63, 64, 65, 128, 1000];
    for (const [k, id] of ids.entries()) load.addPrefillOnly(id, 10 + k);
    expect(ids.map((id) => load.activePrefillTokens(id))).toEqual(ids.map((_, k) => 10 + k));
  });

  test("requests with blocks on rank ids past the first sizes count like small ones; an unseen rank reads 0", () => {
    const load = new ActiveLoad();
    expect([load.activePrefillTokens(64), load.activeBlocks(64), load.activePrefillTokens(5000)]).toEqual([0, 0, 0]);
    const reqs = [64, 200, 1000].map((id) => load.add(id, [BigInt(id), BigInt(id) + 1n], 9));
    expect([64, 200, 1000].map((id) => [load.activeBlocks(id), load.activePrefillTokens(id)])).toEqual([[2, 9], [2, 9], [2, 9]]);
    for (const r of reqs) load.finish(r);
    expect([64, 200, 1000].map((id) => load.activeBlocks(id))).toEqual([0, 0, 0]);
  });

  test("a one-token prefill leaves on its first token", () => {
    const load = new ActiveLoad();
    const r = load.add(0, [1n], 1);
    expect(load.activePrefillTokens(0)).toBe(1);
    load.firstToken(r);
    expect([load.activePrefillTokens(0), load.activeBlocks(0)]).toEqual([0, 1]);
  });

  test("finishing a prefill-only request releases its prefill and no blocks", () => {
    const load = new ActiveLoad();
    const held = load.add(0, [1n, 2n, 3n], 30);
    const p = load.addPrefillOnly(0, 7);
    expect([load.activeBlocks(0), load.activePrefillTokens(0)]).toEqual([3, 37]);
    load.finish(p);
    expect([load.activeBlocks(0), load.activePrefillTokens(0)]).toEqual([3, 30]);
    load.finish(held);
    expect([load.activeBlocks(0), load.activePrefillTokens(0)]).toEqual([0, 0]);
  });
});
