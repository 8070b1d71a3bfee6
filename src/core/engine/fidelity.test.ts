// One hand-built case per engine behaviour docs/DECISIONS.md notes (Engine): vLLM V1's single token
// budget, one G1 removal per block, prompt-only G2 offload, waiting for an in-flight copy, one
// recomputed token after a full G2 load, G2 LRU touched by a lookup. The reset clearing G1 only is
// pinned in host-tier.test.ts.
import { describe, expect, test } from "bun:test";
import { engine, eventSummary, hasher, residencyMismatch, runToIdle, seq, stepOnce, type Run } from "../../../test/engine-kit.ts";
import type { KvEvent, KvStoredEvent } from "../kv/kv-events.ts";
import { DEFAULT_ENGINE_CONFIG } from "./engine-config.ts";
import { stepDurationMs } from "../timing/timing-model.ts";

const fixed = { timingModel: "fixed", prefillMs: 1, decodeMs: 1 } as const;
// kvBytesPerToken 1 at block size 4 = 4 bytes per block; 1e-6 GB/s = 1 byte per ms.
const slow = 1e-6;
const hostStored = (events: readonly KvEvent[]) => events.filter((e): e is KvStoredEvent => e.kind === "stored" && e.tier === "host");
const newRun = (nowMs: number): Run => ({ steps: [], events: [], tokens: new Map(), nowMs });

describe("scheduler: one token budget over the running list, then waiting (vLLM V1)", () => {
  test("a long prefill ahead in the running list stalls a decode behind it for exactly one step", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 32, numHostBlocks: 16, kvBytesPerToken: 1, hostOffloadH2dBandwidthGbps: slow, maxNumBatchedTokens: 8, ...fixed });
    // Put an 8-token prefix in G2 only, so B is admitted first but waits (loading) for 8 ms.
    e.addRequest({ id: "p", tokenIds: seq(0, 9), maxTokens: 1 });
    const p = runToIdle(e);
    e.resetPrefixCache();
    e.addRequest({ id: "b", tokenIds: seq(0, 16), maxTokens: 2 }); // 8 loaded, 8 (= the budget) to compute
    e.addRequest({ id: "a", tokenIds: seq(500, 3), maxTokens: 20 });
    const run = newRun(p.nowMs);
    const perStep: string[][] = [];
    for (let i = 0; i < 12; i++) perStep.push(stepOnce(e, run).tokens.map((t) => t.requestId));
    // a prefills in step 1 and decodes every step except the one where b's 8-token prefill,
    // ahead of it in running order, takes the whole budget.
    const stalled = perStep.map((ids, i) => [i, ids] as const).filter(([, ids]) => !ids.includes("a"));
    expect(stalled.length).toBe(1);
    const [at, ids] = stalled[0]!;
    expect(ids).toEqual(["b"]);
    expect(perStep[at + 1]).toEqual(["b", "a"]); // b decodes, then a: both fit again
  });
});

describe("G1", () => {
  test("an eviction of several cached blocks emits one removed event per block, tail first", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 3, ...fixed });
    e.addRequest({ id: "a", tokenIds: seq(0, 12), maxTokens: 1 });
    const a = runToIdle(e);
    e.addRequest({ id: "b", tokenIds: seq(100, 12), maxTokens: 1 });
    const b = runToIdle(e, a.nowMs);
    const h = hasher.hashBlocks(seq(0, 12), 4).sequence;
    expect(b.events.filter((x) => x.kind === "removed")).toEqual([
      { kind: "removed", tier: "device", blockHashes: [h[2]!] },
      { kind: "removed", tier: "device", blockHashes: [h[1]!] },
      { kind: "removed", tier: "device", blockHashes: [h[0]!] },
    ]);
    expect(residencyMismatch(e, [...a.events, ...b.events])).toBeUndefined();
  });
});

describe("G2", () => {
  test("a block-aligned prompt fully in G2 loads every block and computes one token", () => {
    const cfg = { blockSize: 4, numGpuBlocks: 32, numHostBlocks: 16, kvBytesPerToken: 1, hostOffloadH2dBandwidthGbps: slow } as const;
    const e = engine(cfg);
    e.addRequest({ id: "p", tokenIds: seq(0, 8), maxTokens: 1 });
    const p = runToIdle(e);
    expect(e.inspect().resident.host.length).toBe(2);
    e.resetPrefixCache();
    e.addRequest({ id: "q", tokenIds: seq(0, 8), maxTokens: 1 });
    const run = newRun(p.nowMs);
    expect(stepOnce(e, run).scheduledRequests).toBe(0);
    expect(e.nextWakeMs()).toBe(p.nowMs + 8); // both blocks (2 × 4 bytes at 1 byte/ms)
    run.nowMs = e.nextWakeMs()!;
    const s = stepOnce(e, run);
    // One prefill token, not the last block's four, plus its first token's decode at 2 of 32 blocks.
    const timing = { ...DEFAULT_ENGINE_CONFIG, ...cfg };
    expect(s.durationMs).toBeCloseTo(stepDurationMs(timing, 1, 1, 2 / 32), 9);
    expect(s.finished[0]).toMatchObject({ promptTokens: 8, cachedTokens: 7, hostLoadedTokens: 7 });
    // The loaded first block joins G1 when the load lands, the last once its token is computed.
    expect(eventSummary(s.events)).toEqual(["stored:device:1", "stored:device:1"]);
  });

  for (const [decodeBlocks, title] of [
    [false, "only prompt blocks are offloaded by default"],
    [true, "--host-offload-decode-blocks offloads the generated blocks too"],
  ] as const) {
    test(title, () => {
      const e = engine({ blockSize: 4, numGpuBlocks: 32, numHostBlocks: 16, kvBytesPerToken: 1, hostOffloadDecodeBlocks: decodeBlocks, ...fixed });
      // 5 prompt tokens + 8 generated: 3 full blocks on G1, of which only block 0 is all prompt.
      e.addRequest({ id: "turn1", tokenIds: seq(0, 5), maxTokens: 8 });
      const run = runToIdle(e);
      expect(eventSummary(run.events.filter((x) => x.kind === "stored" && x.tier === "device"))).toEqual(["stored:device:1", "stored:device:1", "stored:device:1"]);
      const offloaded = hostStored(run.events).flatMap((x) => x.blockHashes).length;
      expect([decodeBlocks, offloaded, e.metrics().hostBlocksStored]).toEqual([decodeBlocks, decodeBlocks ? 3 : 1, decodeBlocks ? 3 : 1]);
      expect(residencyMismatch(e, run.events)).toBeUndefined();
    });
  }

  test("a prompt whose prefix is still being copied to G2 waits for the copy, then loads it", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 32, numHostBlocks: 16, kvBytesPerToken: 1, hostOffloadD2hBandwidthGbps: slow, ...fixed });
    e.addRequest({ id: "p", tokenIds: seq(0, 8), maxTokens: 1 });
    const run = newRun(0);
    stepOnce(e, run); // t 0 → 2 (prefill + first token); p's 2 blocks: d2h copy 2 → 10
    run.events.push(...e.resetPrefixCache()!.events); // G1 gone, the copy still in flight
    e.addRequest({ id: "q", tokenIds: seq(0, 9), maxTokens: 1 });
    const parked = stepOnce(e, run);
    expect(parked.scheduledRequests).toBe(0);
    expect(e.inspect().loading).toEqual(["q"]);
    expect(e.nextWakeMs()).toBe(10);
    run.nowMs = 10;
    const s = stepOnce(e, run);
    // The copy lands (host stored), q's load completes from it (device stored), 1 token computed.
    expect(eventSummary(s.events)).toEqual(["stored:host:2", "stored:device:2"]);
    expect(e.metrics().eventsDropped).toBe(0);
    expect(s.finished[0]).toMatchObject({ cachedTokens: 8, hostLoadedTokens: 8 });
    expect(residencyMismatch(e, run.events)).toBeUndefined();
  });

  test("a waited-for copy whose store is dropped ends the load there: the request computes the rest, nothing leaks", () => {
    // A released-block FIFO of 1: after the reset releases p's two G1 blocks, block 0's token ids
    // are gone, so the copy in flight cannot be stored (a store that cannot be resolved is dropped whole).
    const e = engine({ blockSize: 4, numGpuBlocks: 32, numHostBlocks: 16, kvBytesPerToken: 1, hostOffloadD2hBandwidthGbps: slow, releasedFifoBlocks: 1, ...fixed });
    e.addRequest({ id: "p", tokenIds: seq(0, 8), maxTokens: 1 });
    const run = newRun(0);
    stepOnce(e, run);
    run.events.push(...e.resetPrefixCache()!.events);
    e.addRequest({ id: "q", tokenIds: seq(0, 9), maxTokens: 1 });
    expect(stepOnce(e, run).scheduledRequests).toBe(0);
    expect(e.inspect()).toMatchObject({ loading: ["q"], hostPinnedBlocks: 2 });
    run.nowMs = e.nextWakeMs()!;
    const s = stepOnce(e, run);
    expect(s.dropped?.length).toBe(1);
    expect(s.finished[0]).toMatchObject({ promptTokens: 9, cachedTokens: 0, hostLoadedTokens: 0 });
    expect(eventSummary(s.events)).toEqual(["stored:device:2"]); // computed, not loaded
    expect(e.metrics().prefixHitTokens).toBe(0);
    // The dropped entries' cells were freed at the unpin: only q's own two copies are in flight.
    expect(e.inspect()).toMatchObject({ hostPinnedBlocks: 0, hostUsedBlocks: 2 });
    const rest = runToIdle(e, run.nowMs);
    expect(residencyMismatch(e, [...run.events, ...rest.events])).toBeUndefined();
    expect(e.inspect().resident.host.length).toBe(2); // q's own copy of the two blocks landed
  });

  test("a lookup touches its G2 hits: the looked-up prefix outlives a block stored after it", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 32, numHostBlocks: 2, kvBytesPerToken: 1, maxNumBatchedTokens: 10, enableChunkedPrefill: false, ...fixed });
    e.addRequest({ id: "a", tokenIds: [...seq(0, 4), 999], maxTokens: 1 });
    let t = runToIdle(e).nowMs; // G2: a0
    e.addRequest({ id: "b", tokenIds: seq(100, 5), maxTokens: 1 });
    t = runToIdle(e, t).nowMs; // G2: a0 b0 (a0 least recently used)
    e.resetPrefixCache();
    // r takes 5 of the 10-token budget; c's lookup hits a0 in G2, but its 6 remaining tokens do
    // not fit the 5 left (chunked prefill off), so c waits for the next step.
    e.addRequest({ id: "r", tokenIds: seq(200, 5), maxTokens: 1 });
    e.addRequest({ id: "c", tokenIds: [...seq(0, 4), ...seq(300, 6)], maxTokens: 1 });
    const run = newRun(t);
    const s = stepOnce(e, run);
    expect(s.tokens.map((x) => x.requestId)).toEqual(["r"]);
    // r's block needs a G2 cell: b0 is evicted, not the touched a0.
    const b0 = hasher.hashBlocks(seq(100, 4), 4).sequence[0]!;
    expect(s.events.filter((x) => x.kind === "removed" && x.tier === "host")).toEqual([{ kind: "removed", tier: "host", blockHashes: [b0] }]);
    const rest = runToIdle(e, run.nowMs);
    expect(rest.steps.flatMap((x) => x.finished).find((f) => f.requestId === "c")).toMatchObject({ cachedTokens: 4, hostLoadedTokens: 4 });
  });
});
