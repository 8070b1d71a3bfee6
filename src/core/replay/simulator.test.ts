import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { parseMooncakeTrace } from "../workload/mooncake-trace.ts";
import { sharedPrefixWorkload } from "../workload/synthetic.ts";
import type { WorkloadRequest } from "../workload/workload.ts";
import { buildReport } from "./report.ts";
import { simulate, type SimulationOptions } from "./simulator.ts";

const hasher = createBlockHasher();
const TRACE = new URL("../../../traces/mooncake_conversation_trace.jsonl", import.meta.url).pathname;
const trace = parseMooncakeTrace(readFileSync(TRACE, "utf8"));
const base: SimulationOptions = { engine: {}, numWorkers: 1, routerMode: "round-robin", arrival: { kind: "trace", speedupRatio: 1 }, seed: 0 };

const tokensOf = (r: WorkloadRequest) => {
  const out = new Uint32Array(r.inputLength);
  r.writeTokens(out);
  return out;
};

describe("replay simulator: prefix-cache reuse sanity anchor", () => {
  // One worker, one request at a time (so every earlier prompt is fully computed before the next
  // is admitted) and a G1 that never evicts. Then a request's cached tokens are exactly its
  // leading full blocks, below the prompt_len − 1 cap, whose whole prefix was a full prompt block
  // of an earlier request. (Blocks completed by generated tokens are cached too, but they mix the
  // prompt's partial tail with output tokens, which no later trace prompt repeats.)
  const slice = trace.requests.slice(0, 300);

  test("block size 512 = trace block size: the share of trace blocks seen before", () => {
    const rows = readFileSync(TRACE, "utf8").split("\n").slice(0, 300).map((l) => JSON.parse(l) as { input_length: number; hash_ids: number[] });
    const seen = new Set<string>();
    let cached = 0, prompt = 0;
    for (const r of rows) {
      const full = Math.floor(r.input_length / 512);
      const cap = Math.floor((r.input_length - 1) / 512);
      let k = 0;
      while (k < cap && seen.has(r.hash_ids.slice(0, k + 1).join(","))) k++;
      cached += k * 512;
      prompt += r.input_length;
      for (let j = 0; j < full; j++) seen.add(r.hash_ids.slice(0, j + 1).join(","));
    }
    const sim = simulate(slice, { ...base, engine: { blockSize: 512, numGpuBlocks: 200_000 }, arrival: { kind: "concurrency", concurrency: 1 } }, { hasher });
    const report = buildReport(sim, { routerMode: "round-robin", wallTimeMs: 1 });
    expect(report.failed).toBe(0);
    expect(report.cached_tokens).toBe(cached);
    expect(report.total_input_tokens).toBe(prompt);
    expect(report.prefix_cache_reuse_ratio).toBe(cached / prompt);
    expect(cached).toBeGreaterThan(0);
  });

  test("block size 64 (8 engine blocks per trace block, partial trace blocks partly cacheable)", () => {
    const seen = new Set<bigint>();
    let cached = 0, prompt = 0;
    for (const r of slice) {
      const seqs = hasher.hashBlocks(tokensOf(r), 64).sequence;
      const cap = Math.floor((r.inputLength - 1) / 64);
      let k = 0;
      while (k < cap && seen.has(seqs[k]!)) k++;
      cached += k * 64;
      prompt += r.inputLength;
      for (const s of seqs) seen.add(s);
    }
    const sim = simulate(slice, { ...base, engine: { blockSize: 64, numGpuBlocks: 200_000 }, arrival: { kind: "concurrency", concurrency: 1 } }, { hasher });
    const report = buildReport(sim, { routerMode: "round-robin", wallTimeMs: 1 });
    expect(report.cached_tokens).toBe(cached);
    expect(report.prefix_cache_reuse_ratio).toBe(cached / prompt);
  });

  test("a finite G1 served one request at a time reuses exactly what a plain LRU of the same size keeps", () => {
    // Independent reference: a Map in insertion order as the LRU of free cached blocks (g1-block-pool.ts's rules:
    // blocks in use are not evictable; a freed sequence returns tail first, so its head is most
    // recent; uncached cells are taken before any cached block is evicted; a block whose hash is
    // already cached stays uncached). Prompt blocks are keyed by their sequence hash (block-hash.ts),
    // blocks holding generated tokens by the prompt (same prompt, same seeded output) and index.
    const bs = 512;
    const capacity = 48;
    const budget = 8192;
    const lru = new Map<string, true>();
    let cached = 0, evictions = 0;
    for (const r of slice) {
      const tokens = tokensOf(r);
      const seqs = hasher.hashBlocks(tokens, bs).sequence;
      const total = r.inputLength + r.outputLength - 1;
      if (Math.ceil(total / bs) > capacity) continue; // refused by the engine
      const promptId = String(Bun.hash(tokens));
      const keyOf = (i: number) => (i < seqs.length ? String(seqs[i]) : `${promptId}|${i}`);
      const cap = Math.floor((r.inputLength - 1) / bs);
      let k = 0;
      while (k < cap && lru.has(keyOf(k))) k++;
      cached += k * bs;
      const held: (string | null)[] = [];
      const inUse = new Set<string>();
      for (let i = 0; i < k; i++) {
        lru.delete(keyOf(i));
        held.push(keyOf(i));
        inUse.add(keyOf(i));
      }
      let uncachedFree = capacity - held.length - lru.size;
      let computed = k * bs;
      let registered = k;
      const grow = (target: number) => {
        while (held.length < Math.ceil(target / bs)) {
          if (uncachedFree > 0) uncachedFree--;
          else {
            lru.delete(lru.keys().next().value!);
            evictions++;
          }
          held.push(null);
        }
      };
      const commit = () => {
        const full = Math.floor(computed / bs);
        for (let i = registered; i < full; i++) {
          const key = keyOf(i);
          if (!lru.has(key) && !inUse.has(key)) {
            held[i] = key;
            inUse.add(key);
          }
        }
        registered = Math.max(registered, full);
      };
      while (computed < r.inputLength) {
        const n = Math.min(r.inputLength - computed, budget);
        grow(computed + n);
        computed += n;
        commit();
      }
      while (computed < total) {
        grow(computed + 1);
        computed++;
        commit();
      }
      for (let i = held.length - 1; i >= 0; i--) {
        const key = held[i]!;
        if (key === null) uncachedFree++;
        else lru.set(key, true);
      }
    }
    const sim = simulate(slice, { ...base, engine: { blockSize: bs, numGpuBlocks: capacity }, arrival: { kind: "concurrency", concurrency: 1 } }, { hasher });
    const report = buildReport(sim, { routerMode: "round-robin", wallTimeMs: 1 });
    const unbounded = buildReport(simulate(slice, { ...base, engine: { blockSize: bs, numGpuBlocks: 200_000 }, arrival: { kind: "concurrency", concurrency: 1 } }, { hasher }), { routerMode: "round-robin", wallTimeMs: 1 });
    expect(evictions).toBeGreaterThan(1000); // the cache is really finite for this slice
    expect(report.cached_tokens).toBe(cached);
    expect(report.cached_tokens).toBeLessThan(unbounded.cached_tokens);
    expect(report.cached_tokens).toBeGreaterThan(0);
  });

  test("with trace arrivals concurrent same-prefix requests can only lose hits", () => {
    const closed = simulate(slice, { ...base, engine: { blockSize: 512, numGpuBlocks: 200_000 }, arrival: { kind: "concurrency", concurrency: 1 } }, { hasher });
    const open = simulate(slice, { ...base, engine: { blockSize: 512, numGpuBlocks: 200_000 } }, { hasher });
    const sum = (a: Int32Array) => a.reduce((s, x) => s + x, 0);
    expect(sum(open.cachedTokens)).toBeLessThanOrEqual(sum(closed.cachedTokens));
    expect(sum(open.cachedTokens)).toBeGreaterThan(0.8 * sum(closed.cachedTokens));
  });
});

describe("replay simulator: metrics and arrivals", () => {
  const one = (inputLength: number, outputLength: number, timestampMs = 0, first = 1): WorkloadRequest => ({
    timestampMs,
    inputLength,
    outputLength,
    writeTokens: (out) => {
      for (let i = 0; i < inputLength; i++) out[i] = first + i;
    },
  });
  const fixed = { blockSize: 4, timingModel: "fixed", prefillMs: 10, decodeMs: 5 } as const;

  test("TTFT, ITL, TPOT and E2E on a hand-checked run", () => {
    const sim = simulate([one(4, 3)], { ...base, engine: fixed }, { hasher });
    const r = buildReport(sim, { routerMode: "round-robin", wallTimeMs: 2 });
    // Prefill 10 + decode 5 (the step emits the first token), then two decode steps of 5.
    expect(r).toMatchObject({ completed: 1, failed: 0, mean_ttft_ms: 15, mean_itl_ms: 5, mean_tpot_ms: 5, mean_e2el_ms: 25, duration: 0.025, total_output_tokens: 3, wall_time_s: 0.002 });
    expect(r.request_throughput).toBeCloseTo(40, 9);
    expect(r.output_throughput).toBeCloseTo(120, 9);
    expect(r.simulated_time_s).toBe(0.025);
    expect(r).toMatchObject({ p50_ttft_ms: 15, p90_ttft_ms: 15, p99_ttft_ms: 15, p50_e2el_ms: 25, p99_e2el_ms: 25, data_parallel_size: 1 });
  });

  test("one worker with two ranks reports data parallel size 2", () => {
    const sim = simulate([one(4, 2), one(4, 2)], { ...base, engine: fixed, numWorkers: 1, dataParallelSize: 2 }, { hasher });
    expect(buildReport(sim, { routerMode: "round-robin", wallTimeMs: 1 })).toMatchObject({ num_workers: 1, data_parallel_size: 2 });
  });

  /** r0 at 0 ms, r1 at 12 ms (while r0's first step runs). */
  const midStepArrival = () => simulate([one(4, 2, 0), one(4, 1, 12, 100)], { ...base, engine: fixed }, { hasher });

  test("trace timestamps set arrivals", () => {
    expect([...midStepArrival().arrivalMs]).toEqual([0, 12]);
  });

  test("a request arriving mid-step waits for the next step", () => {
    // r0: prefill + decode 0→15 (token 1). r1 arrives at 12, starts at 15 beside r0's decode:
    // prefill + decode 15→30 (r1's token 1, r0's token 2).
    expect([...midStepArrival().firstTokenMs]).toEqual([15, 30]);
  });

  test("an engine idle while a host load runs is woken when it lands, and its request resumes", () => {
    // Closed loop, one at a time, on 6 G1 blocks of 4 tokens: p, q (which evicts most of p), p
    // again. p's blocks went to the host tier; the second p loads them (1 GB/s), then computes.
    const w = [one(16, 2, 0, 1), one(16, 2, 0, 1000), one(16, 2, 0, 1)];
    const engine = { ...fixed, numGpuBlocks: 6, numHostBlocks: 16, hostOffloadD2hBandwidthGbps: 1, hostOffloadH2dBandwidthGbps: 1 };
    const sim = simulate(w, { ...base, engine, arrival: { kind: "concurrency", concurrency: 1 } }, { hasher });
    expect(sim.errors.size).toBe(0);
    expect([...sim.arrivalMs]).toEqual([0, 20, 40]);
    // One G1 block still cached; three loaded from the host (the last token is computed again).
    expect([...sim.cachedTokens]).toEqual([0, 0, 15]);
    expect([...sim.hostLoadedTokens]).toEqual([0, 0, 11]);
    // The load: 3 blocks × 4 tokens × 131,072 B at 1 GB/s; then prefill 10 + decode 5, decode 5.
    const loadMs = (3 * 4 * 131_072) / 1e6;
    expect(sim.firstTokenMs[2]).toBeCloseTo(40 + loadMs + 15, 9);
    expect(sim.lastTokenMs[2]).toBeCloseTo(40 + loadMs + 20, 9);
    expect(sim.engines[0]!.steps).toBe(6);
    // Copied to the host: p's and q's 4 full prompt blocks each; the second p's were there already.
    expect(buildReport(sim, { routerMode: "round-robin", wallTimeMs: 1 }).host_blocks_stored).toBe(8);
  });

  test("closed loop: never more than N in flight", () => {
    const w = Array.from({ length: 12 }, (_, i) => one(6, 3, 0, i * 10));
    const sim = simulate(w, { ...base, engine: fixed, numWorkers: 2, arrival: { kind: "concurrency", concurrency: 3 } }, { hasher });
    const events: [number, number][] = [];
    for (let i = 0; i < 12; i++) events.push([sim.arrivalMs[i]!, 1], [sim.lastTokenMs[i]!, -1]);
    events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let inFlight = 0, peak = 0;
    for (const [, d] of events) peak = Math.max(peak, (inFlight += d));
    expect(peak).toBe(3);
  });

  test("a request that can never fit fails with its reason while the rest complete", () => {
    const sim = simulate([one(4, 2), one(400, 2), one(4, 2)], { ...base, engine: { ...fixed, numGpuBlocks: 10 } }, { hasher });
    const r = buildReport(sim, { routerMode: "round-robin", wallTimeMs: 1 });
    expect(r.completed).toBe(2);
    expect(r.failed).toBe(1);
    expect(r.errors[0]).toEqual({ request: 1, error: expect.stringContaining("more than the 10 this rank has") });
  });

  test("the report lists the first 20 errors of many", () => {
    const sim = simulate(Array.from({ length: 25 }, () => one(400, 2)), { ...base, engine: { ...fixed, numGpuBlocks: 10 } }, { hasher });
    const r = buildReport(sim, { routerMode: "round-robin", wallTimeMs: 1 });
    expect([r.failed, r.errors.length]).toEqual([25, 20]);
  });

  test("kv routing sends shared prefixes to the same worker: more reuse than round-robin", () => {
    const w = sharedPrefixWorkload({ numPrefixes: 8, prefixTokens: 512, suffixTokens: 64, outputTokens: 8, requests: 200, seed: 3 });
    const run = (routerMode: "kv" | "round-robin" | "random") =>
      buildReport(simulate(w, { ...base, engine: { blockSize: 64, numGpuBlocks: 64 }, numWorkers: 4, routerMode, arrival: { kind: "rate", requestsPerSecond: 20 } }, { hasher }), { routerMode, wallTimeMs: 1 });
    const kv = run("kv"), rr = run("round-robin"), rnd = run("random");
    expect(kv.failed + rr.failed + rnd.failed).toBe(0);
    expect(rr.requests_per_worker).toEqual([50, 50, 50, 50]);
    expect(kv.prefix_cache_reuse_ratio).toBeGreaterThan(rr.prefix_cache_reuse_ratio);
    expect(kv.prefix_cache_reuse_ratio).toBeGreaterThan(rnd.prefix_cache_reuse_ratio);
    expect(kv.requests_per_worker.reduce((a, b) => a + b)).toBe(200);
  });

  test("Dynamo's load model: kv beats round-robin on TTFT and reuse at every concurrency", () => {
    // 16 shared 4,096-token prefixes + 128 own tokens; 4 workers whose G1 holds 8 prefixes each.
    const w = sharedPrefixWorkload({ numPrefixes: 16, prefixTokens: 4096, suffixTokens: 128, outputTokens: 128, requests: 400, seed: 0 });
    const run = (routerMode: "kv" | "round-robin", concurrency: number) =>
      buildReport(simulate(w, { ...base, engine: { blockSize: 64, numGpuBlocks: 512 }, numWorkers: 4, routerMode, arrival: { kind: "concurrency", concurrency } }, { hasher }), { routerMode, wallTimeMs: 1 });
    for (const c of [2, 4, 16, 32]) {
      const kv = run("kv", c), rr = run("round-robin", c);
      expect([c, kv.failed, rr.failed]).toEqual([c, 0, 0]);
      expect([c, kv.prefix_cache_reuse_ratio > rr.prefix_cache_reuse_ratio + 0.1]).toEqual([c, true]);
      expect([c, kv.mean_ttft_ms < 0.9 * rr.mean_ttft_ms]).toEqual([c, true]);
    }
  });

  test("busy thresholds shed load: rejected requests are counted and reported as failed", () => {
    const w = sharedPrefixWorkload({ numPrefixes: 4, prefixTokens: 256, suffixTokens: 64, outputTokens: 16, requests: 40, seed: 2 });
    const opts: SimulationOptions = { ...base, engine: { blockSize: 64, numGpuBlocks: 64 }, numWorkers: 2, routerMode: "kv", arrival: { kind: "rate", requestsPerSecond: 1000 } };
    const open = simulate(w, opts, { hasher });
    expect([open.rejected, open.errors.size]).toEqual([0, 0]);
    const shed = simulate(w, { ...opts, router: { busy: { activePrefillTokens: 320 } } }, { hasher });
    const r = buildReport(shed, { routerMode: "kv", wallTimeMs: 1 });
    expect(r.rejected).toBeGreaterThan(0);
    expect(r.failed).toBe(r.rejected);
    expect(r.completed + r.rejected).toBe(40);
    expect(r.errors[0]!.error).toContain("rejected: every worker is busy");
  });

  test("a queue threshold holds requests while every worker is saturated, then routes them in order", () => {
    const w = sharedPrefixWorkload({ numPrefixes: 4, prefixTokens: 256, suffixTokens: 64, outputTokens: 16, requests: 40, seed: 2 });
    // All 40 arrive within 40 ms; a worker's budget is 512 tokens, so 2 × 320-token prompts fill it.
    const opts: SimulationOptions = { ...base, engine: { blockSize: 64, numGpuBlocks: 64, maxNumBatchedTokens: 512 }, numWorkers: 2, routerMode: "kv", arrival: { kind: "rate", requestsPerSecond: 1000 } };
    const open = simulate(w, opts, { hasher });
    const held = simulate(w, { ...opts, router: { queueThreshold: 0.5 } }, { hasher });
    expect(open.queued).toBe(0);
    expect(held.queued).toBeGreaterThan(0);
    expect(held.errors.size).toBe(0); // held, not shed: every request completes
    const r = buildReport(held, { routerMode: "kv", wallTimeMs: 1 });
    expect([r.completed, r.queued]).toEqual([40, held.queued]);
  });

  test("without KV events the router predicts residency from its decisions and still follows prefixes", () => {
    const w = sharedPrefixWorkload({ numPrefixes: 8, prefixTokens: 512, suffixTokens: 64, outputTokens: 8, requests: 200, seed: 3 });
    const run = (routerMode: "kv" | "round-robin", router?: SimulationOptions["router"]) =>
      buildReport(simulate(w, { ...base, engine: { blockSize: 64, numGpuBlocks: 64 }, numWorkers: 4, routerMode, router, arrival: { kind: "rate", requestsPerSecond: 20 } }, { hasher }), { routerMode, wallTimeMs: 1 });
    const approx = run("kv", { approximateTtlMs: 120_000 });
    expect(approx.failed).toBe(0);
    expect(approx.prefix_cache_reuse_ratio).toBeGreaterThan(run("round-robin").prefix_cache_reuse_ratio + 0.1);
  });

  test("workers and ranks stay apart: 2 workers × 3 ranks are 6 candidates, reported per worker and per rank", () => {
    const w = sharedPrefixWorkload({ numPrefixes: 4, prefixTokens: 64, suffixTokens: 16, outputTokens: 4, requests: 60, seed: 1 });
    const opts: SimulationOptions = { ...base, engine: { blockSize: 16, numGpuBlocks: 64 }, numWorkers: 2, dataParallelSize: 3, arrival: { kind: "rate", requestsPerSecond: 50 } };
    const sim = simulate(w, opts, { hasher });
    const r = buildReport(sim, { routerMode: "round-robin", wallTimeMs: 1 });
    expect(r).toMatchObject({ completed: 60, num_workers: 2, data_parallel_size: 3, requests_per_worker: [30, 30], requests_per_rank: [[10, 10, 10], [10, 10, 10]] });
    expect(Math.max(...sim.worker)).toBe(1);
    expect(Math.max(...sim.dpRank)).toBe(2);
  });

  test("deterministic: same inputs, same report", () => {
    const w = sharedPrefixWorkload({ numPrefixes: 4, prefixTokens: 100, suffixTokens: 30, outputTokens: 20, requests: 60, seed: 9 });
    const opts: SimulationOptions = { ...base, engine: { blockSize: 16, numGpuBlocks: 80, numHostBlocks: 40 }, numWorkers: 3, routerMode: "random", arrival: { kind: "rate", requestsPerSecond: 50 }, seed: 5 };
    const a = buildReport(simulate(w, opts, { hasher }), { routerMode: "random", wallTimeMs: 1 });
    const b = buildReport(simulate(w, opts, { hasher }), { routerMode: "random", wallTimeMs: 1 });
    expect(b).toEqual(a);
    expect(a.completed).toBe(60);
    // The seed reaches the router: another seed picks other workers (60 random picks among 3
    // repeat by chance with probability 3^-60).
    const picks = (seed: number) => [...simulate(w, { ...opts, seed }, { hasher }).worker];
    expect(picks(5)).toEqual(picks(5));
    expect(picks(6)).not.toEqual(picks(5));
    expect(new Set(picks(5)).size).toBe(3);
  });
});
