import { describe, expect, test } from "bun:test";
import { engine, eventSummary, hasher, residencyMismatch, runToIdle, seq, stepOnce, type Run } from "../../../test/engine-kit.ts";
import { polynomialDecodeMs, polynomialPrefillMs } from "../timing/timing-model.ts";

const fixed = { timingModel: "fixed", prefillMs: 1, decodeMs: 1 } as const;

describe("mock engine: requests and output", () => {
  /** Five requests (max tokens 3..7) run to idle on an engine seeded `seed`. */
  const fiveRequests = (seed: number) => {
    const e = engine({ blockSize: 4, numGpuBlocks: 64, seed });
    for (let i = 0; i < 5; i++) expect(e.addRequest({ id: `r${i}`, tokenIds: seq(i * 3, 9 + i), maxTokens: 3 + i }).ok).toBe(true);
    const run = runToIdle(e);
    return { e, run };
  };

  test("a fresh engine without a host tier reports zero for every host and held figure", () => {
    expect(engine({ numGpuBlocks: 16 }).metrics()).toMatchObject({
      hostUsedBlocks: 0, hostResidentBlocks: 0, hostCacheUsage: 0, eventsDropped: 0, hostOffloadSkippedBlocks: 0, hostBlocksStored: 0, heldRequests: 0, heldBlocks: 0, steps: 0,
    });
  });

  test("every request finishes with exactly its max tokens", () => {
    const a = fiveRequests(1);
    for (let i = 0; i < 5; i++) expect(a.run.tokens.get(`r${i}`)!.length).toBe(3 + i);
    expect(a.e.metrics().finishedRequests).toBe(5);
    expect(a.e.pendingRequests).toBe(0);
  });

  test("the same seed gives the same tokens", () => {
    const a = fiveRequests(1), b = fiveRequests(1);
    expect([...a.run.tokens]).toEqual([...b.run.tokens]);
  });

  test("another seed gives other tokens", () => {
    const a = fiveRequests(1), c = fiveRequests(2);
    expect([...c.run.tokens]).not.toEqual([...a.run.tokens]);
  });

  test("finished records carry prompt, cached and completion tokens", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 64 });
    e.addRequest({ id: "a", tokenIds: seq(0, 14), maxTokens: 2 });
    const run = runToIdle(e);
    const fin = run.steps.flatMap((s) => s.finished);
    expect(fin).toEqual([{ requestId: "a", promptTokens: 14, cachedTokens: 0, hostLoadedTokens: 0, completionTokens: 2 }]);
  });

  test("bad requests are refused with a reason, not thrown", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 4, enableChunkedPrefill: false, maxNumBatchedTokens: 8 });
    expect(e.addRequest({ id: "", tokenIds: [1], maxTokens: 1 })).toMatchObject({ ok: false });
    expect(e.addRequest({ id: "x", tokenIds: [], maxTokens: 1 })).toMatchObject({ ok: false, reason: expect.stringContaining("at least one token") });
    expect(e.addRequest({ id: "x", tokenIds: [1], maxTokens: 0 })).toMatchObject({ ok: false, reason: expect.stringContaining("max tokens") });
    expect(e.addRequest({ id: "x", tokenIds: seq(0, 16), maxTokens: 2 })).toMatchObject({ ok: false, reason: expect.stringContaining("KV blocks") });
    expect(e.addRequest({ id: "x", tokenIds: seq(0, 9), maxTokens: 1 })).toMatchObject({ ok: false, reason: expect.stringContaining("chunked prefill off") });
    expect(e.addRequest({ id: "x", tokenIds: seq(0, 4), maxTokens: 2 })).toEqual({ ok: true });
    expect(e.addRequest({ id: "x", tokenIds: seq(0, 4), maxTokens: 2 })).toMatchObject({ ok: false, reason: expect.stringContaining("already in flight") });
  });

  test("abort drops a request and frees its blocks", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 16, ...fixed });
    e.addRequest({ id: "a", tokenIds: seq(0, 10), maxTokens: 50 });
    e.addRequest({ id: "b", tokenIds: seq(100, 10), maxTokens: 50 });
    e.step(0);
    expect(e.metrics().activeBlocks).toBe(6);
    expect(e.abortRequest("a")).toBe(true);
    expect(e.abortRequest("a")).toBe(false);
    expect(e.metrics().activeBlocks).toBe(3);
    expect(e.abortRequest("b")).toBe(true);
    expect(e.pendingRequests).toBe(0);
    expect(e.metrics().activeBlocks).toBe(0);
  });
});

describe("mock engine: G1 prefix cache", () => {
  test("a repeated prompt hits its cached full blocks", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 64 });
    e.addRequest({ id: "a", tokenIds: seq(0, 14), maxTokens: 1 });
    const first = runToIdle(e);
    expect(eventSummary(first.events)).toEqual(["stored:device:3"]);
    e.addRequest({ id: "b", tokenIds: seq(0, 14), maxTokens: 1 });
    const second = runToIdle(e, first.nowMs);
    expect(second.steps.flatMap((s) => s.finished)[0]!.cachedTokens).toBe(12);
    expect(second.events).toEqual([]); // nothing new to store: the partial tail has no hash
    const m = e.metrics();
    expect(m.prefixHitTokens).toBe(12);
    expect(m.prefixQueryTokens).toBe(28);
    expect(m.prefixHitRate).toBeCloseTo(12 / 28, 12);
  });

  test("a prompt admitted in the same step as its prefix's first holder hits the blocks that step computes (vLLM caches them at allocation)", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 64 });
    e.addRequest({ id: "a", tokenIds: seq(0, 14), maxTokens: 1 });
    e.addRequest({ id: "b", tokenIds: [...seq(0, 12), 99, 98], maxTokens: 1 });
    const run = runToIdle(e);
    expect(run.steps[0]!.finished.map((f) => [f.requestId, f.cachedTokens])).toEqual([["a", 0], ["b", 12]]);
    // One stored event for the three shared blocks, none for b's duplicate.
    expect(eventSummary(run.events)).toEqual(["stored:device:3"]);
    expect(e.metrics().prefixHitTokens).toBe(12);
  });

  test("the usable prefix is capped at prompt_len − 1 tokens in whole blocks", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 64, ...fixed });
    e.addRequest({ id: "a", tokenIds: seq(0, 12), maxTokens: 1 });
    const first = runToIdle(e);
    e.addRequest({ id: "b", tokenIds: seq(0, 12), maxTokens: 1 });
    const second = runToIdle(e, first.nowMs);
    // Block-aligned and fully cached: the last block is recomputed, so 8 of 12 tokens hit.
    expect(second.steps.flatMap((s) => s.finished)[0]!.cachedTokens).toBe(8);
    // The recomputed block is already cached: no duplicate stored event.
    expect(second.events).toEqual([]);
    // One token short of a block boundary: 13 tokens → cap floor(12/4) = 3 blocks.
    e.addRequest({ id: "c", tokenIds: seq(0, 13), maxTokens: 1 });
    const third = runToIdle(e, second.nowMs);
    expect(third.steps.flatMap((s) => s.finished)[0]!.cachedTokens).toBe(12);
  });

  test("stored events carry parent hash, local hashes and the blocks' own tokens", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 64 });
    e.addRequest({ id: "a", tokenIds: seq(10, 10), maxTokens: 7 });
    const run = runToIdle(e);
    const stored = run.events.filter((x) => x.kind === "stored");
    expect(stored.map((s) => s.blockHashes.length)).toEqual([2, 1, 1]); // prompt 2 blocks, then generated blocks
    const all = [...seq(10, 10), ...run.tokens.get("a")!];
    const expected = hasher.hashBlocks(all.slice(0, 16), 4);
    const s0 = stored[0]!;
    if (s0.kind !== "stored") throw new Error("unreachable");
    expect(s0.parentHash).toBeNull();
    expect(s0.blockHashes).toEqual([expected.sequence[0]!, expected.sequence[1]!]);
    expect(s0.localHashes).toEqual([expected.local[0]!, expected.local[1]!]);
    expect([...s0.tokenIds]).toEqual(seq(10, 8));
    const s1 = stored[1]!;
    if (s1.kind !== "stored") throw new Error("unreachable");
    expect(s1.parentHash).toBe(expected.sequence[1]!);
    // Block 2 = prompt tokens 18, 19 + the first two generated tokens.
    expect([...s1.tokenIds]).toEqual(all.slice(8, 12));
    expect(s1.blockHashes).toEqual([hasher.hashBlocks(all.slice(0, 12), 4).sequence[2]!]);
  });

  test("eviction takes the least recently freed block, and a sequence is freed tail first", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 4, ...fixed });
    e.addRequest({ id: "a", tokenIds: seq(0, 12), maxTokens: 1 });
    const a = runToIdle(e);
    const h = hasher.hashBlocks(seq(0, 12), 4).sequence;
    // a held cells 0-2; freed tail first → free order: [never-used cell, block 2, block 1, block 0].
    e.addRequest({ id: "b", tokenIds: seq(100, 8), maxTokens: 1 });
    const b = runToIdle(e, a.nowMs);
    const removedB = b.events.filter((x) => x.kind === "removed").flatMap((x) => (x.kind === "removed" ? x.blockHashes : []));
    expect(removedB).toEqual([h[2]!]);
    e.addRequest({ id: "c", tokenIds: seq(200, 4), maxTokens: 1 });
    const c = runToIdle(e, b.nowMs);
    // b's two blocks were freed after a's: a's block 1 is now the least recently freed cached block.
    const removedC = c.events.filter((x) => x.kind === "removed").flatMap((x) => (x.kind === "removed" ? x.blockHashes : []));
    expect(removedC).toEqual([h[1]!]);
    expect(residencyMismatch(e, [...a.events, ...b.events, ...c.events])).toBeUndefined();
  });

  test("with prefix caching off nothing is hashed into the cache and no events are emitted", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 64, enablePrefixCaching: false });
    e.addRequest({ id: "a", tokenIds: seq(0, 14), maxTokens: 6 });
    const first = runToIdle(e);
    e.addRequest({ id: "b", tokenIds: seq(0, 14), maxTokens: 1 });
    const second = runToIdle(e, first.nowMs);
    expect([...first.events, ...second.events]).toEqual([]);
    expect(second.steps.flatMap((s) => s.finished)[0]!.cachedTokens).toBe(0);
  });
});

describe("mock engine: scheduler", () => {
  test("chunked prefill spans steps within the token budget, the first token coming with the last chunk", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 64, maxNumBatchedTokens: 8 });
    e.addRequest({ id: "a", tokenIds: seq(0, 20), maxTokens: 2 });
    const run: Run = { steps: [], events: [], tokens: new Map(), nowMs: 0 };
    const durations = [stepOnce(e, run), stepOnce(e, run), stepOnce(e, run)].map((s) => [s.durationMs, s.tokens.length]);
    expect(durations).toEqual([
      [polynomialPrefillMs(8), 0],
      [polynomialPrefillMs(8), 0],
      [polynomialPrefillMs(4) + polynomialDecodeMs(5 / 64), 1], // the first token pays decode too
    ]);
    const decode = stepOnce(e, run);
    // Decode at p = active blocks / total: 20 prompt + 1 generated → 6 blocks of 64.
    expect(decode.durationMs).toBeCloseTo(polynomialDecodeMs(6 / 64), 12);
    expect(decode.finished.length).toBe(1);
  });

  // Hand-computed from prefill(n) = 4.209989e-7·n² + 0.01518344·n + 16.50142 and
  // decode(p) = max(1, −25.74·p² + 54.01·p + 5.74), p = active blocks / G1 blocks.
  test("a step that ends a prefill pays decode for its first token", () => {
    const whole = engine({ blockSize: 4, numGpuBlocks: 64 });
    whole.addRequest({ id: "a", tokenIds: seq(0, 100), maxTokens: 1 });
    const s = whole.step(0);
    expect(s.tokens.length).toBe(1);
    // prefill(100) = 0.004209989 + 1.518344 + 16.50142 = 18.023973989
    // decode(25/64 = 0.390625) = −3.9276123046875 + 21.09765625 + 5.74 = 22.9100439453125
    expect(s.durationMs).toBeCloseTo(18.023973989 + 22.9100439453125, 9);
  });

  test("a chunk short of the end pays prefill only, the last chunk prefill and decode", () => {
    const chunked = engine({ blockSize: 4, numGpuBlocks: 64, maxNumBatchedTokens: 8 });
    chunked.addRequest({ id: "a", tokenIds: seq(0, 20), maxTokens: 1 });
    const run: Run = { steps: [], events: [], tokens: new Map(), nowMs: 0 };
    const [c1, c2, c3] = [stepOnce(chunked, run), stepOnce(chunked, run), stepOnce(chunked, run)];
    // prefill(8) = 0.0000269439296 + 0.12146752 + 16.50142, no token, no decode
    expect(c1!.durationMs).toBeCloseTo(16.6229144639296, 9);
    expect(c2!.durationMs).toBeCloseTo(16.6229144639296, 9);
    // prefill(4) = 0.0000067359824 + 0.06073376 + 16.50142 = 16.5621604959824
    // decode(5/64 = 0.078125) = −0.1571044921875 + 4.21953125 + 5.74 = 9.8024267578125
    expect(c3!.durationMs).toBeCloseTo(16.5621604959824 + 9.8024267578125, 9);
    expect(c3!.finished.length).toBe(1);
  });

  test("the fixed timing model follows the same rule: prefill 20 ms, plus decode 10 ms with the first token", () => {
    const fx = engine({ blockSize: 4, numGpuBlocks: 64, maxNumBatchedTokens: 8, timingModel: "fixed", prefillMs: 20, decodeMs: 10 });
    fx.addRequest({ id: "a", tokenIds: seq(0, 12), maxTokens: 2 });
    const fxRun: Run = { steps: [], events: [], tokens: new Map(), nowMs: 0 };
    expect([stepOnce(fx, fxRun), stepOnce(fx, fxRun), stepOnce(fx, fxRun)].map((x) => x.durationMs)).toEqual([20, 30, 10]);
  });

  test("one token budget per step, and admission stops at max_num_seqs", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 64, maxNumBatchedTokens: 10, maxNumSeqs: 2, ...fixed });
    e.addRequest({ id: "a", tokenIds: seq(0, 3), maxTokens: 5 });
    e.addRequest({ id: "b", tokenIds: seq(50, 3), maxTokens: 5 });
    e.addRequest({ id: "c", tokenIds: seq(100, 9), maxTokens: 5 });
    const run: Run = { steps: [], events: [], tokens: new Map(), nowMs: 0 };
    expect(stepOnce(e, run).tokens.map((t) => t.requestId)).toEqual(["a", "b"]); // c waits: 2 seqs max
    expect(e.inspect().waiting).toEqual(["c"]);
    // a and b finish with their 5th token in step 5; c is admitted in the step after.
    for (let i = 0; i < 4; i++) stepOnce(e, run);
    expect(e.inspect()).toMatchObject({ running: [], waiting: ["c"] });
    const s = stepOnce(e, run);
    expect(s.tokens.map((t) => t.requestId)).toEqual(["c"]);
  });

  test("a decode ahead in running order spends one budget token: a prompt is chunked around it", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 64, maxNumBatchedTokens: 6 });
    e.addRequest({ id: "a", tokenIds: seq(0, 2), maxTokens: 9 });
    const run: Run = { steps: [], events: [], tokens: new Map(), nowMs: 0 };
    stepOnce(e, run); // a prefilled, first token
    e.addRequest({ id: "b", tokenIds: seq(40, 11), maxTokens: 1 });
    // a decodes first (1 token of the one budget), b gets the 6 − 1 = 5 left; blocks: a ceil(3/4) + b ceil(5/4) = 3.
    const s = stepOnce(e, run);
    expect(s.durationMs).toBeCloseTo(polynomialPrefillMs(5) + polynomialDecodeMs(3 / 64), 12);
    const s2 = stepOnce(e, run); // 5 more: a ceil(4/4) + b ceil(10/4) = 4 blocks
    expect(s2.durationMs).toBeCloseTo(polynomialPrefillMs(5) + polynomialDecodeMs(4 / 64), 12);
    const s3 = stepOnce(e, run); // b's last prompt token, and b samples its only token
    expect(s3.durationMs).toBeCloseTo(polynomialPrefillMs(1) + polynomialDecodeMs(5 / 64), 12);
    expect(s3.tokens.map((t) => t.requestId).sort()).toEqual(["a", "b"]);
  });

  for (const mode of ["lifo", "fifo"] as const) {
    test(`preemption ${mode}: frees the ${mode === "lifo" ? "newest" : "oldest"} request, which resumes and keeps its tokens`, () => {
      const e = engine({ blockSize: 4, numGpuBlocks: 6, preemptionMode: mode, ...fixed });
      // Each needs 3 blocks to start (8 prompt + 1); growing to 4 blocks exhausts the 6 cells.
      e.addRequest({ id: "old", tokenIds: seq(0, 8), maxTokens: 8 });
      e.addRequest({ id: "new", tokenIds: seq(100, 8), maxTokens: 8 });
      const run: Run = { steps: [], events: [], tokens: new Map(), nowMs: 0 };
      let victim: string | undefined;
      for (let i = 0; i < 20 && victim === undefined; i++) {
        stepOnce(e, run);
        if (e.metrics().preemptions > 0) victim = e.inspect().waiting[0];
      }
      expect(victim).toBe(mode === "lifo" ? "new" : "old");
      const kept = run.tokens.get(victim!)!.slice();
      const rest = runToIdle(e, run.nowMs);
      // Preempted with its tokens kept: it resumes and ends with exactly 8, the first ones unchanged.
      const all = [...kept, ...(rest.tokens.get(victim!) ?? [])];
      expect(all.length).toBe(8);
      expect(all.slice(0, kept.length)).toEqual(kept);
      expect((run.tokens.get(victim === "new" ? "old" : "new")!.length ?? 0) + (rest.tokens.get(victim === "new" ? "old" : "new")?.length ?? 0)).toBe(8);
      // Greedy-like determinism: the preempted request's tokens equal an unpreempted run's.
      const solo = engine({ blockSize: 4, numGpuBlocks: 64, ...fixed });
      solo.addRequest({ id: victim!, tokenIds: victim === "new" ? seq(100, 8) : seq(0, 8), maxTokens: 8 });
      expect(runToIdle(solo).tokens.get(victim!)).toEqual(all);
      expect(residencyMismatch(e, [...run.events, ...rest.events])).toBeUndefined();
    });
  }
});
