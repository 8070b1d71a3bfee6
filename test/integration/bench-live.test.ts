// `bench` against an in-test OpenAI-style server with fixed, known delays: measured TTFT and E2EL
// are never below what the server did and TPOT and ITL are consistent with them (no bound that a
// slow machine could break), counts add up, and failing servers (500s, cut streams, stalls, error
// chunks, nothing listening) are reported per cause, never fatal.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createRng } from "../../src/core/random/rng.ts";
import { arrivalTimesMs } from "../../src/core/workload/arrivals.ts";
import type { WorkloadRequest } from "../../src/core/workload/workload.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import { benchExitCode, runBench } from "../../src/roles/bench/run-bench.ts";
import type { BenchDeps, BenchOptions } from "../../src/roles/bench/bench-types.ts";
import { startFakeOpenAi } from "../fake-openai-server.ts";
import { runCli, tempDir } from "../harness.ts";

function deps(logs: string[] = [], out: string[] = []): BenchDeps {
  return {
    hasher: createBlockHasher(),
    readFile: (p) => readFileSync(p, "utf8"),
    writeFile: () => {},
    checkWritable: () => {},
    stdout: { write: (t: string) => out.push(t) },
    logger: createLogger({ level: "warn", stream: { write: (t: string) => logs.push(t) } as unknown as NodeJS.WritableStream }),
    now: () => performance.now(),
    sleep: (ms) => Bun.sleep(ms),
  };
}

const base = (url: string, over: Partial<BenchOptions> = {}): BenchOptions => ({
  targets: [{ url }],
  endpoint: "/v1/completions",
  promptFormat: "tokens",
  stream: true,
  ignoreEos: true,
  workload: { traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 2, prefixTokens: 32, suffixTokens: 8, outputTokens: 6 }, requests: 12, seed: 1 },
  concurrency: 4,
  arrivalSpeedupRatio: 1,
  warmupRequests: 0,
  percentiles: [50, 90, 99],
  requestTimeoutS: 10,
  workerHeader: "x-kvcr-worker",
  ...over,
});

describe("bench against a server with known delays", () => {
  test("the figures are consistent with what the server did (TTFT and E2EL never below it), usage, reuse and workers included", async () => {
    await using server = startFakeOpenAi({ ttftMs: 60, itlMs: 25, cachedTokens: (p) => p - 8, worker: (n) => `w${n % 2}` });
    const { results } = await runBench(base(server.url), deps());
    const r = results[0]!;
    expect(r).toMatchObject({ completed: 12, failed: 0, model_id: "fake-model", total_output_tokens: 72, total_input_tokens: 12 * 40, per_worker: { w0: 6, w1: 6 }, error_breakdown: {} });
    // The truth is what the server did, on the bench's clock: when each request arrived and when its
    // first and last content chunks were written (E2E latency ends at the last chunk carrying a
    // choice, as vLLM's client measures it, not at [DONE]). A request is sent before the server has it and
    // a chunk is read after the server wrote it, so each measured TTFT and E2EL is at least the
    // server's; by how much depends on the machine, so nothing bounds them from above. The order
    // carries over to the medians (numpy's, as the bench computes them).
    const med = (xs: number[]) => {
      const s = xs.sort((a, b) => a - b);
      return (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2;
    };
    const trueTtft = med(server.timings.map((t) => t.chunkMs[0]! - t.receivedMs));
    const trueE2el = med(server.timings.map((t) => t.chunkMs.at(-1)! - t.receivedMs));
    expect(trueTtft).toBeGreaterThanOrEqual(59); // the server kept its delay
    expect(r.median_ttft_ms!).toBeGreaterThanOrEqual(trueTtft);
    expect(r.median_e2el_ms!).toBeGreaterThanOrEqual(trueE2el);
    expect(r.median_ttft_ms!).toBeLessThan(r.median_e2el_ms!);
    // TPOT = (E2E − TTFT) / (tokens − 1) per request; with 6 tokens each, the means obey it exactly.
    expect(r.mean_tpot_ms!).toBeCloseTo((r.mean_e2el_ms! - r.mean_ttft_ms!) / 5, 6);
    // ITL are the 5 gaps between a request's 6 content chunks, which E2E − TTFT spans exactly: on
    // average an ITL is a TPOT.
    expect(r.mean_itl_ms!).toBeGreaterThan(0);
    expect(r.mean_itl_ms!).toBeCloseTo(r.mean_tpot_ms!, 6);
    expect(r.prefix_cache_reuse_ratio).toBeCloseTo(32 / 40, 6);
    for (const k of ["p50_ttft_ms", "p90_itl_ms", "p99_tpot_ms", "p99_e2el_ms", "std_ttft_ms", "mean_itl_ms"]) expect(typeof (r as Record<string, unknown>)[k]).toBe("number");
    // What the server received: token-id prompts, fixed output lengths, streaming with usage.
    expect(server.bodies[0]).toMatchObject({ model: "fake-model", max_tokens: 6, min_tokens: 6, ignore_eos: true, stream: true, stream_options: { include_usage: true } });
    expect((server.bodies[0]!.prompt as number[]).length).toBe(40);
  });

  test("every request sent is counted once, a failure by its cause (500, cut stream, stall, error chunk)", async () => {
    const kinds = ["ok", "500", "cut", "stall", "error-chunk"] as const;
    await using server = startFakeOpenAi({ ttftMs: 5, itlMs: 2, plan: (n) => kinds[n % kinds.length]! });
    const logs: string[] = [];
    const out = await runBench(base(server.url, { workload: { ...base("").workload, requests: 15 }, requestTimeoutS: 0.5 }), deps(logs));
    const r = out.results[0]!;
    expect(r.completed + r.failed).toBe(15);
    expect(server.bodies.length).toBe(15);
    expect(r.completed).toBe(3);
    expect(r.error_breakdown).toEqual({ "500": 3, stream_cut: 3, stream_error: 3, timeout: 3 });
    expect(r.errors.some((e) => e.includes("HTTP 500: injected failure"))).toBe(true);
    expect(r.errors.some((e) => e.includes("stream ended without data: [DONE]"))).toBe(true);
    expect(benchExitCode(out)).toBe(0);
    expect(logs.join("")).toContain("12 of 15 requests failed");
  });

  test("a connection reset mid-stream is a cut stream that says how many chunks arrived", async () => {
    await using server = startFakeOpenAi({ ttftMs: 5, itlMs: 2, plan: () => "reset" });
    const out = await runBench(base(server.url, { workload: { ...base("").workload, requests: 2 } }), deps());
    const r = out.results[0]!;
    expect(r.error_breakdown).toEqual({ stream_cut: 2 });
    expect(r.errors.every((e) => e.includes("stream cut after 2 chunk(s)"))).toBe(true);
  });

  test("nothing listening: the server is named unreachable before anything is sent, and no table is printed", async () => {
    for (const model of ["m", undefined]) {
      const out: string[] = [];
      const err = await runBench(base("http://127.0.0.1:9", { model, workload: { ...base("").workload, requests: 3 } }), deps([], out)).catch((e: unknown) => e);
      expect((err as Error).message).toStartWith("the server at http://127.0.0.1:9 is unreachable (");
      expect((err as Error).message).toContain("nothing was sent");
      expect(out).toEqual([]);
    }
  });

  test("from the command line: exit 1, one line on stderr, nothing on stdout", async () => {
    const r = await runCli(["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--requests", "3", "--log-level", "warn"]);
    expect([r.exitCode, r.stdout]).toEqual([1, ""]);
    expect(r.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^kvcr-mock: the server at http:\/\/127\.0\.0\.1:9 is unreachable \(.*\); nothing was sent/)]);
  });

  test("Poisson arrivals and --duration: sending stops at the deadline, in-flight requests finish", async () => {
    await using server = startFakeOpenAi({ ttftMs: 5, itlMs: 5 });
    // A clock moved only by the bench's waits for its next arrival: however slow the machine, every
    // arrival due before the 0.5 s deadline is sent and none after it.
    let clock = 0;
    const logs: string[] = [];
    const logger = createLogger({ level: "info", stream: { write: (t: string) => logs.push(t) } as unknown as NodeJS.WritableStream });
    const virtualClock = { ...deps(), logger, now: () => clock, sleep: async (ms: number) => void (clock += ms) };
    const { results } = await runBench(base(server.url, { concurrency: undefined, requestRate: 40, durationS: 0.5, workload: { ...base("").workload, requests: undefined } }), virtualClock);
    const r = results[0]!;
    // The run is announced by its duration, not by the size of the workload generated for it.
    const announced = logs.find((l) => l.includes(`requests to ${server.url}`));
    expect(announced).toContain("for 0.5 s");
    expect(announced).not.toMatch(/\d+ requests to/);
    // The schedule the bench follows: Poisson gaps at 40/s from the run's seed.
    const due = arrivalTimesMs(Array.from({ length: 100 }, () => ({}) as WorkloadRequest), { kind: "rate", requestsPerSecond: 40 }, createRng(1))!.filter((t) => t < 500).length;
    expect(due).toBeGreaterThan(3);
    expect(due).toBeLessThan(60);
    expect(r.failed).toBe(0);
    expect(r.completed).toBe(due);
    expect(server.bodies.length).toBe(due);
    expect(r.request_rate).toBe(40);
  });

  test("a chat-endpoint run with text prompts counts only the requests after warm-up", async () => {
    await using server = startFakeOpenAi({ ttftMs: 5, itlMs: 2 });
    const { results } = await runBench(base(server.url, { endpoint: "/v1/chat/completions", promptFormat: "text", warmupRequests: 3 }), deps());
    expect(results[0]).toMatchObject({ completed: 12, failed: 0, backend: "openai-chat", warmup_requests: 3 });
    expect(server.bodies.length).toBe(15);
    const msg = (server.bodies[0]!.messages as { content: string }[])[0]!.content;
    expect(msg.split(" ").length).toBe(40);
  });
});

describe("kvcr-mock bench (CLI)", () => {
  test("JSON keys of vllm bench serve, --percentiles, exit 0", async () => {
    await using server = startFakeOpenAi({ ttftMs: 5, itlMs: 2 });
    using dir = tempDir("kvcr-bench-");
    const json = join(dir.path, "r.json");
    const r = await runCli(["bench", "--url", server.url, "--model", "fake-model", "--requests", "8", "--concurrency", "2", "--output-tokens", "4", "--prefix-tokens", "16", "--suffix-tokens", "4", "--percentiles", "50,99.9", "--output-json", json]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain("Serving Benchmark Result");
    expect(r.stdout).toContain("P99.9 TTFT (ms):");
    const doc = JSON.parse(readFileSync(json, "utf8"));
    for (const k of ["completed", "failed", "duration", "request_throughput", "output_throughput", "total_token_throughput", "mean_ttft_ms", "median_ttft_ms", "p99.9_ttft_ms", "p50_tpot_ms", "mean_itl_ms", "p99.9_e2el_ms", "prefix_cache_reuse_ratio", "error_breakdown", "per_worker"]) expect(Object.hasOwn(doc, k)).toBe(true);
    expect(doc).toMatchObject({ completed: 8, failed: 0, max_concurrency: 2, per_worker: {}, prefix_cache_reuse_ratio: null });
  });

  test("bad flags exit 2 naming the problem", async () => {
    const r = await runCli(["bench", "--url", "localhost:8000", "--percentiles", "50,abc", "--concurrency", "2", "--request-rate", "3"]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('--url: got "localhost:8000", expected an http(s) URL');
    expect(r.stderr).toContain('--percentiles: got "abc"');
    expect(r.stderr).toContain("--concurrency and --request-rate: choose one arrival mode");
    const none = await runCli(["bench"]);
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toContain("--url: required");
  });
});

describe("bench --with-replay", () => {
  test("the same workload simulated by replay is printed beside the measurement and saved in the JSON", async () => {
    await using server = startFakeOpenAi({ ttftMs: 5, itlMs: 2 });
    const out: string[] = [];
    const written: Record<string, string> = {};
    const d = { ...deps([], out), writeFile: (p: string, t: string) => void (written[p] = t) };
    const opts = base(server.url, {
      outputJson: "r.json",
      withReplay: { numWorkers: 2, routerMode: "kv", engine: { blockSize: 16, timingModel: "fixed", prefillMs: 5, decodeMs: 2 } },
    });
    const outcome = await runBench(opts, d);
    expect(outcome.replay).toMatchObject({ completed: 12, failed: 0, num_workers: 2, router_mode: "kv" });
    const text = out.join("");
    expect(text).toContain("Replay prediction vs live measurement (2 simulated worker(s), router kv)");
    expect(text).toMatch(/^mean TTFT \(ms\) +[\d.]+ +[\d.]+ +[\d.]+×$/m);
    expect(text).toMatch(/^output throughput \(tok\/s\) +[\d.]+ +[\d.]+ +[\d.]+×$/m);
    const json = JSON.parse(written["r.json"]!);
    expect(json.runs[0]).toMatchObject({ completed: 12 });
    expect(json.replay).toMatchObject({ completed: 12, router_mode: "kv" });
  });
});

describe("bench with a fresh stack per run", () => {
  test("each mode × concurrency point starts its own stack, runs the same workload on it and closes it", async () => {
    const started: string[] = [];
    let open = 0;
    const d: BenchDeps = {
      ...deps(),
      startStack: async ({ routerMode: mode }) => {
        started.push(mode!);
        open++;
        const s = startFakeOpenAi({ ttftMs: mode === "kv" ? 5 : 15, itlMs: 2, worker: () => mode });
        return { url: s.url, close: async () => void (open--, await s[Symbol.asyncDispose]()) };
      },
    };
    const out = await runBench(base("", { targets: [{ label: "kv", fresh: { routerMode: "kv" } }, { label: "round-robin", fresh: { routerMode: "round-robin" } }], concurrency: undefined, sweepConcurrency: [1, 4] }), d);
    expect(started).toEqual(["kv", "kv", "round-robin", "round-robin"]);
    expect(open).toBe(0);
    expect(out.results.map((r) => [r.label, r.completed, r.max_concurrency, Object.keys(r.per_worker)[0]])).toEqual([
      ["kv c=1", 12, 1, "kv"],
      ["kv c=4", 12, 4, "kv"],
      ["round-robin c=1", 12, 1, "round-robin"],
      ["round-robin c=4", 12, 4, "round-robin"],
    ]);
    // Each run was timed against its own stack: no TTFT below that stack's delay (5 ms kv, 15 ms
    // round-robin; 1 ms of slack, as a timer may fire that early).
    expect(out.results.map((r) => r.median_ttft_ms! >= (r.label!.startsWith("kv") ? 5 : 15) - 1)).toEqual([true, true, true, true]);
  });
});
