import { describe, expect, test } from "bun:test";
import { KvcrError } from "../../lib/errors.ts";
import { replayExitCode, runReplay } from "./run-replay.ts";
import { replayHarness as harness, SMALL_REPLAY_OPTIONS as opts } from "../../../test/replay-kit.ts";

const good = (ts: number, ids: number[]) => JSON.stringify({ timestamp: ts, input_length: ids.length * 4 - 1, output_length: 3, hash_ids: ids });

describe("replay role", () => {
  test("bad trace lines stop the run before simulating, naming each line", async () => {
    const h = harness({ "t.jsonl": [good(0, [1, 2]), "oops", good(5, [1, 3]), JSON.stringify({ timestamp: 1, input_length: 4 })].join("\n") });
    const err = await runReplay({ ...opts, trace: "t.jsonl" }, h.deps).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KvcrError);
    expect((err as KvcrError).code).toBe("TRACE_INVALID");
    expect((err as Error).message).toContain("2 bad line(s) in t.jsonl; nothing was simulated");
    expect((err as Error).message).toContain("t.jsonl:2: invalid JSON");
    expect((err as Error).message).toContain("t.jsonl:4: missing fields output_length, hash_ids");
    expect(h.out).toEqual([]);
  });

  test("--skip-bad-lines replays the good lines and warns about the others", async () => {
    const h = harness({ "t.jsonl": [good(0, [1, 2]), "oops", good(5, [1, 3])].join("\n") });
    const report = await runReplay({ ...opts, trace: "t.jsonl", skipBadLines: true, outputJson: "r.json" }, h.deps);
    expect(report.completed).toBe(2);
    expect(h.logs.join("")).toContain("skipping 1 bad line(s) of t.jsonl");
    expect(h.out.join("")).toContain("Successful requests:                    2");
    expect(JSON.parse(h.written["r.json"]!)).toMatchObject({ completed: 2, failed: 0, num_workers: 2, router_mode: "kv" });
  });

  test("a missing trace file is a clear error", async () => {
    const h = harness({});
    await expect(runReplay({ ...opts, trace: "nope.jsonl" }, h.deps)).rejects.toThrow("cannot read --trace nope.jsonl");
  });

  test("synthetic workload with --output-json - prints JSON instead of the table", async () => {
    const h = harness({});
    const report = await runReplay({ ...opts, requests: 30, concurrency: 4, outputJson: "-" }, h.deps);
    const printed = JSON.parse(h.out.join(""));
    expect(printed).toEqual(JSON.parse(JSON.stringify(report)));
    expect(printed.completed).toBe(30);
    expect(printed.prefix_cache_reuse_ratio).toBeGreaterThan(0.5);
    for (const k of ["mean_ttft_ms", "p99_itl_ms", "p90_tpot_ms", "median_e2el_ms", "request_throughput", "output_throughput", "wall_time_s", "simulated_time_s"]) expect(typeof printed[k]).toBe("number");
  });

  test("--router-mode oracle runs like any mode; with --regret the table and the JSON carry the regret, without it none", async () => {
    const h = harness({});
    const report = await runReplay({ ...opts, routerMode: "oracle", requests: 30, concurrency: 4, regret: true, outputJson: "r.json" }, h.deps);
    const table = h.out.join("");
    expect(table).toContain("Workers × ranks / router:               2 × 1 / oracle");
    expect(table).toContain(`Routed to a best-cache (worker, rank):  ${(report.regret!.best_cache_share * 100).toFixed(1)} %`);
    for (const row of ["Cache regret mean / p99 (blocks):", "Cache regret mean / p99 (prefill ms):", "Routed to a least-loaded rank:", "Load regret mean / p99 (requests):"]) expect(table).toContain(row);
    expect(JSON.parse(h.written["r.json"]!).regret).toMatchObject({ requests: 30, interval_s: 0 });
    const off = harness({});
    expect((await runReplay({ ...opts, requests: 30, concurrency: 4, regret: false, outputJson: "r.json" }, off.deps)).regret).toBeUndefined();
    expect(off.out.join("")).not.toContain("regret");
    expect(JSON.parse(off.written["r.json"]!)).not.toHaveProperty("regret");
  });

  test("--requests takes the first N requests of a trace", async () => {
    const h = harness({ "t.jsonl": [good(0, [1, 2]), good(1, [1, 3]), good(2, [1, 4])].join("\n") });
    expect((await runReplay({ ...opts, trace: "t.jsonl", requests: 2 }, h.deps)).completed).toBe(2);
  });

  test("an unwritable --output-json stops the run before the trace is even read", async () => {
    const h = harness({ "t.jsonl": good(0, [1, 2]) });
    const err = await runReplay({ ...opts, trace: "t.jsonl", outputJson: "/ro/r.json" }, h.deps).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KvcrError);
    expect((err as KvcrError).code).toBe("OUTPUT_UNWRITABLE");
    expect((err as Error).message).toBe("cannot write --output-json /ro/r.json: EACCES: permission denied; nothing was simulated");
    expect(h.reads).toEqual([]);
    expect(h.out).toEqual([]);
    // "-" is stdout: nothing to probe.
    expect((await runReplay({ ...opts, trace: "t.jsonl", outputJson: "-" }, h.deps)).completed).toBe(1);
  });

  test("no request completed: the report still prints, the reason is logged and the exit status is 1", async () => {
    const h = harness({});
    // 32 + 8 prompt tokens + 4 output at block size 4 need 11 blocks; each rank has 8.
    const report = await runReplay({ ...opts, requests: 5, engine: { blockSize: 4, numGpuBlocks: 8 }, outputJson: "r.json" }, h.deps);
    expect(report).toMatchObject({ completed: 0, failed: 5 });
    expect(replayExitCode(report)).toBe(1);
    expect(h.out.join("")).toContain("Failed requests:                        5");
    expect(JSON.parse(h.written["r.json"]!)).toMatchObject({ completed: 0, failed: 5 });
    const log = h.logs.join("");
    expect(log).toContain("no request completed: all 5 failed (first: request 0: prompt (40) + max tokens (4) need 11 KV blocks, more than the 8 this rank has); exit status 1");
  });

  test("some requests failed: reported and warned, exit status 0 (as vLLM's benchmark tools)", async () => {
    const long = JSON.stringify({ timestamp: 2, input_length: 60, output_length: 3, hash_ids: Array.from({ length: 15 }, (_, i) => 50 + i) });
    const h = harness({ "t.jsonl": [good(0, [1, 2]), long, good(5, [1, 3])].join("\n") });
    const report = await runReplay({ ...opts, trace: "t.jsonl", engine: { blockSize: 4, numGpuBlocks: 8 } }, h.deps);
    expect(report).toMatchObject({ completed: 2, failed: 1, errors: [{ request: 1 }] });
    expect(replayExitCode(report)).toBe(0);
    expect(h.logs.join("")).toContain("1 of 3 requests failed (first: request 1: prompt (60)");
  });

  test("host stores dropped for unrecoverable token ids reach the JSON and the table", async () => {
    // A slow d2h lane and no released-block FIFO: G1 cells are reused while copies are in flight
    // and their token ids are gone when the copies land (such a store is dropped and counted, docs/commands.md).
    const engine = { blockSize: 4, numGpuBlocks: 16, numHostBlocks: 64, kvBytesPerToken: 1, hostOffloadD2hBandwidthGbps: 1e-6, releasedFifoBlocks: 0, timingModel: "fixed" as const, prefillMs: 1, decodeMs: 1 };
    const h = harness({});
    const report = await runReplay({ ...opts, numWorkers: 1, requests: 30, concurrency: 4, engine, outputJson: "r.json" }, h.deps);
    expect(report.completed).toBe(30);
    expect(report.host_stores_dropped).toBeGreaterThan(0);
    expect(JSON.parse(h.written["r.json"]!).host_stores_dropped).toBe(report.host_stores_dropped);
    expect(h.out.join("")).toContain(`Host stores dropped (token ids lost):   ${report.host_stores_dropped}`);
    // With the default FIFO every store resolves.
    const kept = await runReplay({ ...opts, numWorkers: 1, requests: 30, concurrency: 4, engine: { ...engine, releasedFifoBlocks: 16_384 } }, harness({}).deps);
    expect(kept.host_stores_dropped).toBe(0);
  });

  test("host_blocks_stored counts G2 blocks stored (table and JSON): prompt blocks only unless decode offload is on", async () => {
    const engine = { blockSize: 4, numGpuBlocks: 4096, numHostBlocks: 4096, kvBytesPerToken: 1, timingModel: "fixed" as const, prefillMs: 1, decodeMs: 1 };
    // Synthetic: 8 requests, 2 prefixes of 8 tokens + 4 unique tokens each, 9 output tokens.
    const base = { ...opts, numWorkers: 1, requests: 8, concurrency: 1, synthetic: { numPrefixes: 2, prefixTokens: 8, suffixTokens: 4, outputTokens: 9 } };
    const h = harness({});
    const prompt = await runReplay({ ...base, engine, outputJson: "r.json" }, h.deps);
    // 2 shared prefix blocks per prefix (stored once each) + 1 unique suffix block per request.
    expect(prompt.host_blocks_stored).toBe(2 * 2 + 8);
    expect(JSON.parse(h.written["r.json"]!).host_blocks_stored).toBe(prompt.host_blocks_stored);
    expect(h.out.join("")).toContain(`Host (G2) blocks stored:                ${prompt.host_blocks_stored}`);
    // With decode blocks: each request's 12 + 8 computed tokens fill 5 blocks, 2 more per request.
    const all = await runReplay({ ...base, engine: { ...engine, hostOffloadDecodeBlocks: true } }, harness({}).deps);
    expect(all.host_blocks_stored).toBe(2 * 2 + 8 * 3);
  });
});
