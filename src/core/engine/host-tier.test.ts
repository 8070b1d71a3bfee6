import { describe, expect, test } from "bun:test";
import { engine, eventSummary, hasher, residencyMismatch, runToIdle, seq, stepOnce, type Run } from "../../../test/engine-kit.ts";
import type { KvEvent, KvStoredEvent } from "../kv/kv-events.ts";

const fixed = { timingModel: "fixed", prefillMs: 1, decodeMs: 1 } as const;
// kvBytesPerToken 1 at block size 4 = 4 bytes per block; 1e-6 GB/s = 1 byte per ms.
const slow = 1e-6;
const stored = (events: readonly KvEvent[], tier: "device" | "host") =>
  events.filter((e): e is KvStoredEvent => e.kind === "stored" && e.tier === tier);

describe("G2 host tier", () => {
  test("completed G1 blocks are copied to G2 with their token ids (instant lane)", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 16, numHostBlocks: 8, kvBytesPerToken: 1 });
    e.addRequest({ id: "a", tokenIds: seq(0, 14), maxTokens: 1 });
    const run = runToIdle(e);
    expect(eventSummary(run.events)).toEqual(["stored:device:3", "stored:host:3"]);
    const host = stored(run.events, "host")[0]!;
    const h = hasher.hashBlocks(seq(0, 12), 4);
    expect(host.parentHash).toBeNull();
    expect(host.blockHashes).toEqual([...h.sequence]);
    expect(host.localHashes).toEqual([...h.local]);
    expect([...host.tokenIds]).toEqual(seq(0, 12));
    expect(e.metrics()).toMatchObject({ hostUsedBlocks: 3, hostResidentBlocks: 3 });
  });

  test("a prefix evicted from G1 but kept in G2 is loaded back instead of recomputed", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 4, numHostBlocks: 16, kvBytesPerToken: 1, ...fixed });
    e.addRequest({ id: "a", tokenIds: seq(0, 12), maxTokens: 1 });
    const a = runToIdle(e);
    e.addRequest({ id: "b", tokenIds: seq(100, 16), maxTokens: 1 }); // takes all 4 cells: a's blocks leave G1
    const b = runToIdle(e, a.nowMs);
    expect(e.inspect().resident.device.length).toBe(4);
    e.addRequest({ id: "c", tokenIds: seq(0, 13), maxTokens: 1 });
    const c = runToIdle(e, b.nowMs);
    expect(c.steps.flatMap((s) => s.finished)[0]).toMatchObject({ promptTokens: 13, cachedTokens: 12, hostLoadedTokens: 12 });
    // The loaded blocks re-enter G1 (device stored), after evicting b's blocks.
    const loaded = stored(c.events, "device")[0]!;
    expect(loaded.blockHashes).toEqual([...hasher.hashBlocks(seq(0, 12), 4).sequence]);
    expect([...loaded.tokenIds]).toEqual(seq(0, 12));
    // Only the last token was computed: one step of 1 prefill token plus the first token's decode.
    expect(c.steps[0]!.durationMs).toBe(2);
    expect(e.metrics().prefixHostHitTokens).toBe(12);
    expect(residencyMismatch(e, [...a.events, ...b.events, ...c.events])).toBeUndefined();
  });

  test("a slow host-to-device load parks the request until it lands", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 4, numHostBlocks: 16, kvBytesPerToken: 1, hostOffloadH2dBandwidthGbps: slow, ...fixed });
    e.addRequest({ id: "a", tokenIds: seq(0, 12), maxTokens: 1 });
    const a = runToIdle(e);
    e.addRequest({ id: "b", tokenIds: seq(100, 16), maxTokens: 1 });
    const b = runToIdle(e, a.nowMs);
    e.addRequest({ id: "c", tokenIds: seq(0, 13), maxTokens: 1 });
    const run: Run = { steps: [], events: [], tokens: new Map(), nowMs: b.nowMs };
    const parked = stepOnce(e, run);
    expect(parked.scheduledRequests).toBe(0);
    expect(e.idle).toBe(true);
    expect(e.nextWakeMs()).toBe(b.nowMs + 12); // 3 blocks × 4 bytes at 1 byte/ms
    expect(stepOnce(e, run).scheduledRequests).toBe(0); // not yet
    run.nowMs = e.nextWakeMs()!;
    const landed = stepOnce(e, run);
    expect(landed.scheduledRequests).toBe(1);
    expect(stored(landed.events, "device")[0]!.blockHashes.length).toBe(3);
    expect(landed.tokens.map((t) => t.requestId)).toEqual(["c"]);
  });

  test("G1 store → G1 remove → G2 store: the cell was reused while the copy was in flight", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 3, numHostBlocks: 8, kvBytesPerToken: 1, hostOffloadD2hBandwidthGbps: slow, ...fixed });
    e.addRequest({ id: "a", tokenIds: seq(0, 8), maxTokens: 1 });
    const run: Run = { steps: [], events: [], tokens: new Map(), nowMs: 0 };
    const s1 = stepOnce(e, run); // t 0→2 (prefill + first token): a's 2 blocks stored on G1; d2h copy 2 → 10
    expect(eventSummary(s1.events)).toEqual(["stored:device:2"]);
    e.addRequest({ id: "b", tokenIds: seq(100, 12), maxTokens: 1 });
    const s2 = stepOnce(e, run);
    // b needs all 3 cells: a's two are evicted (G1 removed) but still fenced by the copy, so the
    // step waits until 10 before computing (2 ms): it ends at 12, and a's copy lands in it.
    expect(s2.durationMs).toBe(10);
    // One G1 removed per evicted block, as vLLM's BlockPool emits them (tail first).
    expect(eventSummary(s2.events)).toEqual(["removed:device:1", "removed:device:1", "stored:device:3", "stored:host:2"]);
    const h = hasher.hashBlocks(seq(0, 8), 4);
    expect(s2.events.slice(0, 2)).toEqual([
      { kind: "removed", tier: "device", blockHashes: [h.sequence[1]!] },
      { kind: "removed", tier: "device", blockHashes: [h.sequence[0]!] },
    ]);
    const host = stored(s2.events, "host")[0]!;
    expect(host.blockHashes).toEqual([...h.sequence]);
    expect(host.parentHash).toBeNull();
    expect([...host.tokenIds]).toEqual(seq(0, 8));
    expect(e.metrics().eventsDropped).toBe(0);
    const rest = runToIdle(e, run.nowMs);
    expect(residencyMismatch(e, [...run.events, ...rest.events])).toBeUndefined();
  });

  test("a host store with an unrecoverable block is dropped whole, counted, and changes no residency", () => {
    // A released-block FIFO of 1: a's block 1 is released first, then block 0 pushes it out.
    const e = engine({ blockSize: 4, numGpuBlocks: 3, numHostBlocks: 8, kvBytesPerToken: 1, hostOffloadD2hBandwidthGbps: slow, releasedFifoBlocks: 1, ...fixed });
    e.addRequest({ id: "a", tokenIds: seq(0, 8), maxTokens: 1 });
    const run: Run = { steps: [], events: [], tokens: new Map(), nowMs: 0 };
    stepOnce(e, run);
    e.addRequest({ id: "b", tokenIds: seq(100, 12), maxTokens: 1 });
    const s2 = stepOnce(e, run);
    expect(eventSummary(s2.events)).toEqual(["removed:device:1", "removed:device:1", "stored:device:3"]);
    const h = hasher.hashBlocks(seq(0, 8), 4).sequence;
    expect(s2.dropped).toEqual([{ tier: "host", blockHashes: [h[0]!, h[1]!], reason: expect.stringContaining("could not be recovered") }]);
    expect(e.metrics().eventsDropped).toBe(1);
    expect(e.inspect().resident.host).toEqual([]);
    const rest = runToIdle(e, run.nowMs);
    // b's own blocks were still resident when copied: their store resolves normally.
    expect(stored(rest.events, "host").flatMap((x) => x.blockHashes).length).toBe(3);
    expect(residencyMismatch(e, [...run.events, ...rest.events])).toBeUndefined();
  });

  test("G2 evicts least recently used blocks, with removed events of tier host", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 16, numHostBlocks: 2, kvBytesPerToken: 1 });
    e.addRequest({ id: "a", tokenIds: seq(0, 8), maxTokens: 1 });
    const a = runToIdle(e);
    e.addRequest({ id: "b", tokenIds: seq(100, 4), maxTokens: 1 });
    const b = runToIdle(e, a.nowMs);
    const ha = hasher.hashBlocks(seq(0, 8), 4).sequence;
    const removed = b.events.find((x) => x.kind === "removed");
    expect(removed).toEqual({ kind: "removed", tier: "host", blockHashes: [ha[0]!] });
    expect(residencyMismatch(e, [...a.events, ...b.events])).toBeUndefined();
  });

  test("resetPrefixCache clears G1 only (vLLM's reset_prefix_cache), with one device cleared event, only when idle", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 16, numHostBlocks: 8, kvBytesPerToken: 1 });
    e.addRequest({ id: "a", tokenIds: seq(0, 9), maxTokens: 3 });
    const first = e.step(0).events;
    expect(e.resetPrefixCache()).toBeUndefined();
    const run = runToIdle(e, 100);
    run.events.unshift(...first);
    const hostBefore = e.inspect().resident.host;
    expect(hostBefore.length).toBe(2);
    const reset = e.resetPrefixCache()!;
    expect(eventSummary(reset.events)).toEqual(["cleared:device"]);
    expect(e.inspect().resident).toEqual({ device: [], host: hostBefore });
    expect(residencyMismatch(e, [...run.events, ...reset.events])).toBeUndefined();
    // The same prompt again is served from G2: 8 tokens loaded, only the last computed.
    e.addRequest({ id: "b", tokenIds: seq(0, 9), maxTokens: 1 });
    const b = runToIdle(e, run.nowMs);
    expect(b.steps.flatMap((s) => s.finished)[0]).toMatchObject({ cachedTokens: 8, hostLoadedTokens: 8 });
  });
});

describe("G2 races", () => {
  test("aborting a request while its host load is in flight unpins G2 and frees its cells", () => {
    const e = engine({ blockSize: 4, numGpuBlocks: 4, numHostBlocks: 7, kvBytesPerToken: 1, hostOffloadH2dBandwidthGbps: 1e-6, timingModel: "fixed", prefillMs: 1, decodeMs: 1 });
    const log: KvEvent[] = [];
    const go = (id: string, tokens: number[], at: number) => {
      e.addRequest({ id, tokenIds: tokens, maxTokens: 1 });
      const r = runToIdle(e, at);
      log.push(...r.events);
      return r.nowMs;
    };
    let t = go("a", seq(0, 12), 0); // G1 a0-a2, G2 a0-a2
    t = go("b", seq(100, 16), t); // G1 b0-b3 (a evicted from G1), G2 full: a0-a2 b0-b3
    e.addRequest({ id: "c", tokenIds: seq(0, 13), maxTokens: 1 });
    const run: Run = { steps: [], events: [], tokens: new Map(), nowMs: t };
    expect(stepOnce(e, run).scheduledRequests).toBe(0); // c loads a0-a2 from G2 (pinned)
    log.push(...run.events);
    expect(e.metrics().activeBlocks).toBe(3); // the load's destinations; computing waits for it
    expect(e.abortRequest("c")).toBe(true);
    expect(e.metrics().activeBlocks).toBe(0);
    // Unpinned, a0-a2 are evictable again: 2 + 3 new blocks push out b0-b3 and then a2 (the
    // lookup and the unpin leave a prefix's first block most recently used, its tail least).
    t = go("f", seq(900, 8), run.nowMs);
    t = go("g", seq(950, 12), t);
    const a = hasher.hashBlocks(seq(0, 12), 4).sequence;
    const hostRemoved = log.flatMap((x) => (x.kind === "removed" && x.tier === "host" ? x.blockHashes : []));
    expect(hostRemoved.length).toBe(5);
    expect(hostRemoved[4]).toBe(a[2]!);
    expect(e.metrics().hostOffloadSkippedBlocks).toBe(0);
    expect(residencyMismatch(e, log)).toBeUndefined();
  });
});
