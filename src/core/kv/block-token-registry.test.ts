import { describe, expect, test } from "bun:test";
import { BlockTokenRegistry, RELEASED_FIFO_BLOCKS } from "./block-token-registry.ts";

const toks = (x: number) => Uint32Array.from([x, x + 1, x + 2, x + 3]);

describe("token-id recovery for host stores", () => {
  test("G1 store → G1 remove → G2 store still resolves the right token ids", () => {
    const reg = new BlockTokenRegistry();
    reg.stored("device", 11n, null, 101n, toks(10));
    reg.stored("device", 12n, 11n, 102n, toks(20));
    // The G1 cells were reused while the d2h copy was in flight: both removed first.
    reg.removed("device", 12n);
    reg.removed("device", 11n);
    expect(reg.tiersOf(11n)).toBe(0);
    const recs = reg.storeResolved("host", [11n, 12n]);
    expect(recs).toBeDefined();
    expect([...recs![0]!.tokenIds]).toEqual([10, 11, 12, 13]);
    expect([...recs![1]!.tokenIds]).toEqual([20, 21, 22, 23]);
    expect(recs![1]!.parentHash).toBe(11n);
    expect(recs![1]!.localHash).toBe(102n);
    expect(reg.tiersOf(11n)).toBe(2);
    expect(reg.tiersOf(12n)).toBe(2);
  });

  test("a store with one unresolvable block changes no tier bits", () => {
    const reg = new BlockTokenRegistry();
    reg.stored("device", 1n, null, 1n, toks(1));
    reg.stored("device", 2n, 1n, 2n, toks(2));
    expect(reg.storeResolved("host", [1n, 99n, 2n])).toBeUndefined();
    expect(reg.tiersOf(1n)).toBe(1);
    expect(reg.tiersOf(2n)).toBe(1);
    expect(reg.tiersOf(99n)).toBe(0);
  });

  test("the record is a copy: reusing the source buffer does not change it", () => {
    const reg = new BlockTokenRegistry();
    const buf = toks(5);
    reg.stored("device", 5n, null, 5n, buf);
    buf.fill(0);
    expect([...reg.resolve([5n])![0]!.tokenIds]).toEqual([5, 6, 7, 8]);
  });

  test("released blocks stay resolvable for exactly the FIFO's capacity", () => {
    expect(RELEASED_FIFO_BLOCKS).toBe(16_384);
    const reg = new BlockTokenRegistry(3);
    for (let i = 1n; i <= 4n; i++) {
      reg.stored("device", i, null, i, toks(Number(i)));
      reg.removed("device", i);
    }
    // Four released into a FIFO of three: the first expired, the other three remain.
    expect(reg.has(1n)).toBe(false);
    expect(reg.resolve([2n, 3n, 4n])).toBeDefined();
    expect(reg.storeResolved("host", [1n, 2n])).toBeUndefined();
    expect(reg.tiersOf(2n)).toBe(0);
  });

  test("a block resident in another tier never expires, and re-release restarts its FIFO life", () => {
    const reg = new BlockTokenRegistry(2);
    reg.stored("device", 1n, null, 1n, toks(1));
    reg.stored("host", 1n, null, 1n, toks(1));
    reg.removed("device", 1n); // still on host: not released
    for (let i = 2n; i <= 5n; i++) {
      reg.stored("device", i, null, i, toks(Number(i)));
      reg.removed("device", i);
    }
    expect(reg.has(1n)).toBe(true);
    // 7 released, re-stored, released again: the stale FIFO ticket must not expire it.
    reg.stored("device", 7n, null, 7n, toks(7));
    reg.removed("device", 7n); // FIFO: [5, 7]
    reg.stored("device", 7n, null, 7n, toks(7));
    reg.removed("device", 7n); // FIFO: [7, 7']; 5 expired
    expect(reg.has(5n)).toBe(false);
    reg.stored("device", 8n, null, 8n, toks(8));
    reg.removed("device", 8n); // FIFO: [7', 8]; the stale ticket of 7 leaves, 7 stays
    expect(reg.has(7n)).toBe(true);
  });

  test("the released FIFO grows with releases, keeps exactly its capacity across growth, then wraps", () => {
    const reg = new BlockTokenRegistry(RELEASED_FIFO_BLOCKS);
    expect(reg.fifoAllocated).toBeLessThanOrEqual(64);
    const release = (i: bigint) => {
      reg.stored("device", i, null, i, toks(Number(i)));
      reg.removed("device", i);
    };
    for (let i = 1n; i <= 1000n; i++) release(i);
    expect(reg.fifoAllocated).toBeGreaterThanOrEqual(1000);
    expect(reg.fifoAllocated).toBeLessThan(2048);
    const cap = BigInt(RELEASED_FIFO_BLOCKS);
    for (let i = 1001n; i <= cap + 10n; i++) release(i);
    expect(reg.fifoAllocated).toBe(RELEASED_FIFO_BLOCKS);
    // The 10 oldest expired; every later one (stored before and after each growth) resolves.
    for (let i = 1n; i <= 10n; i++) expect(reg.has(i)).toBe(false);
    expect(reg.resolve(Array.from({ length: RELEASED_FIFO_BLOCKS }, (_, k) => BigInt(k) + 11n))?.length).toBe(RELEASED_FIFO_BLOCKS);
    expect(reg.size).toBe(RELEASED_FIFO_BLOCKS);
  });

  test("a record costs its token ids plus a few typed-array words, not an object per block", () => {
    const bs = 64;
    const reg = new BlockTokenRegistry(RELEASED_FIFO_BLOCKS);
    const tokens = new Uint32Array(bs);
    const n = 20_000;
    for (let i = 1; i <= n; i++) {
      tokens.fill(i);
      reg.stored("device", BigInt(i) * 0x9e3779b97f4a7c15n & 0xffff_ffff_ffff_ffffn, null, BigInt(i), tokens);
      if (i % 2 === 0) reg.removed("device", BigInt(i) * 0x9e3779b97f4a7c15n & 0xffff_ffff_ffff_ffffn); // half released into the FIFO
    }
    expect(reg.size).toBe(n);
    // Arrays grow by doubling: at most 2× the records, each 4 × 64 B of tokens + 34 B of fields,
    // plus the FIFO (12 B per entry).
    expect(reg.storageBytes).toBeLessThanOrEqual(2 * n * (4 * bs + 34) + 12 * RELEASED_FIFO_BLOCKS);
    // Cells of expired records are reused: cycling far more blocks than the FIFO holds stays flat.
    const before = reg.storageBytes;
    for (let i = n + 1; i <= n + 100_000; i++) {
      const h = BigInt(i) * 0x9e3779b97f4a7c15n & 0xffff_ffff_ffff_ffffn;
      reg.stored("device", h, null, BigInt(i), tokens);
      reg.removed("device", h);
    }
    expect(reg.storageBytes).toBe(before);
    expect([...reg.resolve([BigInt(n + 100_000) * 0x9e3779b97f4a7c15n & 0xffff_ffff_ffff_ffffn])![0]!.tokenIds]).toEqual([...tokens]);
  });
});

describe("storageBytes", () => {
  test("sums every record array, the token slab and the FIFO, by hand for 64 and 128 cells", () => {
    const reg = new BlockTokenRegistry(64);
    // One 4-token block: 64 cells. hash, parent, local 8 B each; hasParent, tiers 1 B; releasedAt
    // 8 B; the slab 64 × 4 ids × 4 B; the FIFO 64 × (4 + 8) B.
    reg.stored("device", 1n, null, 1n, toks(1));
    expect(reg.storageBytes).toBe(64 * 8 * 3 + 64 + 64 + 64 * 8 + 64 * 4 * 4 + 64 * 4 + 64 * 8);
    expect(reg.storageBytes).toBe(3968);
    // The 65th block doubles the record arrays and the slab; the FIFO (nothing released) stays.
    for (let i = 2; i <= 65; i++) reg.stored("device", BigInt(i), null, BigInt(i), toks(i));
    expect(reg.storageBytes).toBe(128 * 8 * 3 + 128 + 128 + 128 * 8 + 128 * 4 * 4 + 64 * 4 + 64 * 8);
    expect(reg.storageBytes).toBe(7168);
  });
});
