import { describe, expect, test } from "bun:test";
import { engine, residencyMismatch, runToIdle, seq, stepOnce, type Run } from "../../../test/engine-kit.ts";
import type { KvStoredEvent } from "../kv/kv-events.ts";

const BS = 4;
// 1,000 bytes per token at 1 GB/s: 1 µs per token, so a 40-token prompt pulls in 0.04 ms; use 1 MB/token for ms figures.
const cfg = { blockSize: BS, numGpuBlocks: 64, timingModel: "fixed" as const, prefillMs: 20, decodeMs: 10, kvBytesPerToken: 1_000_000, kvTransferBandwidthGbps: 1 };
const stored = (run: Run) => run.events.filter((e): e is KvStoredEvent => e.kind === "stored" && e.tier === "device").flatMap((e) => e.blockHashes);

describe("prefill worker: holds a do_remote_decode request's blocks", () => {
  test("finished with its block ids, referenced until released, then cached and free", () => {
    const e = engine(cfg);
    expect(e.addRequest({ id: "p", tokenIds: seq(1, 10), maxTokens: 1, holdBlocks: true })).toEqual({ ok: true });
    const run = runToIdle(e);
    const fin = run.steps.flatMap((s) => s.finished);
    expect(fin.length).toBe(1);
    const ids = fin[0]!.heldBlockIds!;
    expect(ids.length).toBe(3); // ceil(10 / 4): the partial last block too, as NixlConnector sends
    expect(e.metrics().heldBlocks).toBe(3);
    expect(e.metrics().activeBlocks).toBe(3);
    for (const id of ids) expect(e.inspect().refcounts[id]).toBe(1);
    expect(e.resetPrefixCache()).toBeUndefined(); // held blocks are in use
    expect(e.releaseHeld("p")).toBe(true);
    expect(e.releaseHeld("p")).toBe(false);
    expect([e.metrics().heldBlocks, e.metrics().activeBlocks]).toEqual([0, 0]);
    expect(e.inspect().resident.device.length).toBe(2); // the two full blocks stay cached
    expect(residencyMismatch(e, run.events)).toBeUndefined();
  });

  test("a request without holdBlocks frees at once; a held id cannot be reused while held", () => {
    const e = engine(cfg);
    e.addRequest({ id: "a", tokenIds: seq(1, 8), maxTokens: 1 });
    e.addRequest({ id: "h", tokenIds: seq(50, 8), maxTokens: 1, holdBlocks: true });
    const fin = runToIdle(e).steps.flatMap((s) => s.finished);
    expect(fin.find((f) => f.requestId === "a")!.heldBlockIds).toBeUndefined();
    expect(e.addRequest({ id: "h", tokenIds: seq(1, 8), maxTokens: 1 }).ok).toBe(false);
  });
});

describe("decode worker: pulls a remote prefill", () => {
  test("own hits first, the rest pulled for bytes / bandwidth, no prefill compute, BlockStored when it lands", () => {
    for (const mode of ["full_prompt", "destination_missing"] as const) {
      const e = engine({ ...cfg, kvTransferTimingMode: mode });
      // 2 blocks of the prompt are already cached here.
      e.addRequest({ id: "warm", tokenIds: seq(1, 8), maxTokens: 1 });
      const warm = runToIdle(e);
      const t0 = warm.nowMs;
      const prompt = seq(1, 40); // 10 blocks; 8 tokens local, 31 pulled, the last one computed here
      e.addRequest({ id: "d", tokenIds: prompt, maxTokens: 3, remotePrefill: true });
      const run: Run = { steps: [], events: [], tokens: new Map(), nowMs: t0 };
      const first = stepOnce(e, run);
      expect(first.scheduledRequests).toBe(0); // waiting for the pull: nothing to compute
      const pullMs = ((mode === "full_prompt" ? 40 : 31) * 1_000_000) / 1e6;
      expect(e.nextWakeMs()).toBeCloseTo(t0 + pullMs, 9);
      expect(stored(run)).toEqual([]);
      const rest = runToIdle(e, e.nextWakeMs()!);
      const landed = rest.steps.flatMap((s) => s.remoteLoads ?? []);
      expect(landed).toEqual([{ requestId: "d", tokens: 31, bytes: (mode === "full_prompt" ? 40 : 31) * 1_000_000, transferMs: pullMs }]);
      // Blocks 2..8 are stored as the pull lands, then block 9 once the prompt's last token is computed here.
      const landing = rest.steps[0]!.events.filter((ev): ev is KvStoredEvent => ev.kind === "stored");
      expect(landing.map((ev) => ev.blockHashes.length)).toEqual([7, 1]);
      expect(landing[0]!.parentHash).toBe(stored(warm)[1]!);
      expect(stored(rest).length).toBe(8);
      const fin = rest.steps.flatMap((s) => s.finished)[0]!;
      expect([fin.cachedTokens, fin.remoteLoadedTokens, fin.completionTokens]).toEqual([39, 31, 3]);
      // The step that lands the pull computes one prompt token (its last) and samples: 20 + 10 ms in the fixed model.
      expect(rest.steps[0]!.durationMs).toBe(30);
      expect(rest.tokens.get("d")!.length).toBe(3);
      expect(residencyMismatch(e, [...warm.events, ...run.events, ...rest.events])).toBeUndefined();
    }
  });

  test("the step loop does not wait for a pull: other requests decode meanwhile", () => {
    const e = engine({ ...cfg, kvBytesPerToken: 10_000_000 }); // 40 tokens → 400 ms
    e.addRequest({ id: "local", tokenIds: seq(500, 8), maxTokens: 20 });
    e.addRequest({ id: "pulled", tokenIds: seq(1, 40), maxTokens: 2, remotePrefill: true });
    const firstAt = new Map<string, number>();
    let now = 0;
    while (e.pendingRequests > 0) {
      const r = e.step(now);
      for (const t of r.tokens) if (!firstAt.has(t.requestId)) firstAt.set(t.requestId, now);
      now = r.scheduledRequests > 0 ? now + r.durationMs : e.nextWakeMs()!;
    }
    expect(firstAt.get("local")).toBe(0);
    expect(firstAt.get("pulled")!).toBeGreaterThanOrEqual(400);
    expect(e.metrics().generatedTokens).toBe(22);
  });

  test("pulled tokens cost no prefill compute (polynomial timing: far less than computing them)", () => {
    const poly = { ...cfg, numGpuBlocks: 1024, timingModel: "polynomial" as const, kvTransferBandwidthGbps: 0 };
    const prompt = seq(1, 2000);
    const agg = engine(poly);
    expect(agg.addRequest({ id: "a", tokenIds: prompt, maxTokens: 1 }).ok).toBe(true);
    const dec = engine(poly);
    dec.addRequest({ id: "d", tokenIds: prompt, maxTokens: 1, remotePrefill: true });
    const aggMs = runToIdle(agg).steps.reduce((ms, s) => ms + s.durationMs, 0);
    const decMs = runToIdle(dec).steps.reduce((ms, s) => ms + s.durationMs, 0);
    expect(decMs).toBeLessThan(aggMs * 0.7); // the sample (decode) cost is paid by both
  });

  test("bandwidth 0 is instant: the pull lands at admission", () => {
    const e = engine({ ...cfg, kvTransferBandwidthGbps: 0 });
    e.addRequest({ id: "d", tokenIds: seq(1, 12), maxTokens: 1, remotePrefill: true });
    const first = e.step(0);
    expect(first.remoteLoads).toEqual([{ requestId: "d", tokens: 11, bytes: 12_000_000, transferMs: 0 }]);
    expect(first.finished.map((f) => f.requestId)).toEqual(["d"]);
  });
});

describe("localPrefixBlocks", () => {
  test("counts the leading G1 hits a decode rank need not pull", () => {
    const e = engine(cfg);
    expect(e.localPrefixBlocks(seq(1, 40))).toBe(0);
    e.addRequest({ id: "w", tokenIds: seq(1, 9), maxTokens: 1 });
    runToIdle(e);
    expect(e.localPrefixBlocks(seq(1, 40))).toBe(2);
    expect(e.localPrefixBlocks(seq(1, 8))).toBe(1); // the last token is never a hit
    expect(e.localPrefixBlocks([9, ...seq(2, 39)])).toBe(0);
  });

  test("an adapter's hits are its own blocks: the base model's blocks of the same tokens are not, and the other way round", () => {
    const e = engine(cfg);
    e.addRequest({ id: "base", tokenIds: seq(1, 9), maxTokens: 1 });
    e.addRequest({ id: "lora", tokenIds: seq(100, 9), maxTokens: 1, loraName: "sql-lora" });
    runToIdle(e);
    expect(e.localPrefixBlocks(seq(1, 40), "sql-lora")).toBe(0);
    expect(e.localPrefixBlocks(seq(1, 40))).toBe(2);
    expect(e.localPrefixBlocks(seq(100, 40), "sql-lora")).toBe(2);
    expect(e.localPrefixBlocks(seq(100, 40))).toBe(0);
  });
});
