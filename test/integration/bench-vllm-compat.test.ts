// `kvcr-mock bench` run as a `vllm bench serve` script runs it: vLLM's flags against an in-test
// OpenAI-style server (a --base-url ending in /v1 included), vLLM's result file name, keys and
// units; and the honesty checks: a busy load client, a cache that was not cold for --with-replay,
// and Ctrl-C (exit 130, in-flight requests counted as aborted, the partial result written).
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../src/lib/logger.ts";
import { runBench } from "../../src/roles/bench/run-bench.ts";
import type { BenchDeps, BenchOptions } from "../../src/roles/bench/bench-types.ts";
import { benchDeps, benchOptions } from "../bench-kit.ts";
import { startFakeOpenAi } from "../fake-openai-server.ts";
import { CLI_ENTRY, runCli, spawnChild, tempDir, waitFor, withTimeout } from "../harness.ts";

function deps(logs: string[] = []): BenchDeps {
  return benchDeps({ writeFile: () => {}, logger: createLogger({ level: "warn", stream: { write: (t: string) => logs.push(t) } as unknown as NodeJS.WritableStream }) });
}

const base = (url: string, over: Partial<BenchOptions> = {}): BenchOptions =>
  benchOptions(url, {
    model: "fake-model",
    workload: { traceBlockSize: 512, skipBadLines: false, synthetic: { numPrefixes: 2, prefixTokens: 16, suffixTokens: 4, outputTokens: 6 }, requests: 8, seed: 1 },
    concurrency: 4,
    ...over,
  });

describe("bench as vllm bench serve", () => {
  test("a vLLM command line runs unchanged: vLLM's file name, keys and units, goodput, per-request arrays", async () => {
    await using server = startFakeOpenAi({ ttftMs: 30, itlMs: 5 });
    using dir = tempDir("kvcr-vllm-");
    const resultDir = join(dir.path, "results");
    const r = await runCli([
      "bench", "--base-url", `${server.url}/v1`, "--backend", "openai", "--endpoint", "/v1/completions", "--model", "org/fake-model", "--served-model-name", "fake-model",
      "--tokenizer", "org/fake-model", "--dataset-name", "random", "--random-input-len", "20", "--random-output-len", "4", "--random-range-ratio", "0.5",
      "--num-prompts", "6", "--max-concurrency", "2", "--request-rate", "inf", "--burstiness", "1", "--seed", "3", "--ignore-eos", "--disable-tqdm",
      "--goodput", "ttft:60000", "tpot:60000", "--metric-percentiles", "50,99", "--percentile-metrics", "ttft,tpot,itl,e2el",
      "--save-result", "--save-detailed", "--result-dir", resultDir, "--label", "compat", "--metadata", "tp=1", "--ready-check-timeout-sec", "5",
      "--request-id-prefix", "compat-",
    ]);
    expect(r.exitCode).toBe(0);
    for (const line of ["Request goodput (req/s):", "Peak output token throughput (tok/s):", "Peak concurrent requests:", "Maximum request concurrency:"]) expect(r.stdout).toContain(line);
    // The trailing /v1 was dropped: the server saw /v1/completions, not /v1/v1/completions; the
    // ready check's test request is the one more it saw than the result counts.
    expect(server.bodies.length).toBe(7);
    // vLLM's x-request-id: the prefix and the send order (the ready check's request first).
    expect([...server.requestIds].sort()).toEqual(["compat-0", "compat-1", "compat-2", "compat-3", "compat-4", "compat-5", "compat-6"]);
    expect(server.bodies[0]).toMatchObject({ model: "fake-model", ignore_eos: true, max_tokens: expect.any(Number) });
    const files = readdirSync(resultDir);
    expect(files.length).toBe(1);
    expect(files[0]).toMatch(/^compat-infqps-concurrency2-fake-model-\d{8}-\d{6}\.json$/);
    const doc = JSON.parse(readFileSync(join(resultDir, files[0]!), "utf8"));
    for (const k of ["completed", "failed", "duration", "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput", "output_throughput", "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "p50_itl_ms", "mean_tpot_ms", "p99_e2el_ms", "input_lens", "output_lens", "ttfts", "itls", "start_times", "errors", "generated_texts", "burstiness", "endpoint_type", "tokenizer_id"]) {
      expect(Object.hasOwn(doc, k)).toBe(true);
    }
    expect(doc).toMatchObject({ completed: 6, failed: 0, aborted: 0, label: "compat", max_concurrency: 2, request_rate: "inf", tp: "1", tokenizer_id: "org/fake-model" });
    // Generous SLOs: every request was good.
    expect(doc.request_goodput).toBeCloseTo(doc.request_throughput, 9);
    // vLLM's peak concurrency counts the requests active in a 1 s bin: the whole short run.
    expect(doc.max_concurrent_requests).toBe(6);
    // Random lengths within vLLM's ranges: [10, 30] prompt tokens, [2, 6] output tokens.
    for (const n of doc.input_lens) expect(n >= 10 && n <= 30).toBe(true);
    for (const n of doc.output_lens) expect(n >= 2 && n <= 6).toBe(true);
    expect(doc.total_output_tokens).toBe(doc.output_lens.reduce((a: number, b: number) => a + b, 0));
    // Units: aggregates in ms, per-request arrays in seconds.
    const meanTtftS = doc.ttfts.reduce((a: number, b: number) => a + b, 0) / doc.ttfts.length;
    expect(meanTtftS * 1000).toBeCloseTo(doc.mean_ttft_ms, 6);
    expect(doc.mean_ttft_ms).toBeGreaterThanOrEqual(29);
    expect(doc.itls[0].length).toBe(doc.output_lens[0] - 1);
    expect(doc.errors).toEqual(["", "", "", "", "", ""]);
    expect(doc.generated_texts[0]).toStartWith("t0 ");
  });

  test("without --save-detailed there are no per-request arrays, and request_goodput is null without --goodput", async () => {
    await using server = startFakeOpenAi({ ttftMs: 5, itlMs: 2 });
    using dir = tempDir("kvcr-vllm-");
    const file = join(dir.path, "r.json");
    const r = await runCli(["bench", "--url", `${server.url}/v1/`, "--num-prompts", "3", "--max-concurrency", "1", "--output-json", file, "--percentile-metrics", "ttft"]);
    expect(r.exitCode).toBe(0);
    const doc = JSON.parse(readFileSync(file, "utf8"));
    expect(doc.request_goodput).toBeNull();
    expect(Object.hasOwn(doc, "ttfts")).toBe(false);
    expect(Object.hasOwn(doc, "mean_ttft_ms")).toBe(true);
    expect(Object.hasOwn(doc, "mean_e2el_ms")).toBe(false);
  });

  test("a misspelt flag exits 2 with the nearest name", async () => {
    const r = await runCli(["bench", "--url", "http://127.0.0.1:1", "--max-concurency=2"]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain("did you mean --max-concurrency?");
  });
});

describe("honest output", () => {
  test("a load client whose event loop was blocked says so (stderr and the JSON)", async () => {
    await using server = startFakeOpenAi({ ttftMs: 40, itlMs: 20 });
    // Block this process's loop for 25 ms every 30 ms while the run goes on.
    const blocker = setInterval(() => {
      const until = performance.now() + 25;
      while (performance.now() < until) {
        // busy
      }
    }, 30);
    const logs: string[] = [];
    try {
      const { results } = await runBench(base(server.url), deps(logs));
      const r = results[0]!;
      expect(r.client_event_loop_lag!.distorts_itl).toBe(true);
      expect(r.client_event_loop_lag!.max_ms).toBeGreaterThan(10);
      expect(r.warnings.some((w) => w.includes("event loop lagged"))).toBe(true);
      expect(logs.join("")).toContain("event loop lagged");
    } finally {
      clearInterval(blocker);
    }
  });

  test("--with-replay against a cache that was not cold warns (the first request already found cached tokens)", async () => {
    await using server = startFakeOpenAi({ ttftMs: 5, itlMs: 2, cachedTokens: (p) => p - 4 });
    const logs: string[] = [];
    const { results } = await runBench(base(server.url, { withReplay: { numWorkers: 1, routerMode: "kv", engine: { blockSize: 16, timingModel: "fixed", prefillMs: 5, decodeMs: 2 } } }), deps(logs));
    expect(results[0]!.warnings.some((w) => w.includes("was not cold"))).toBe(true);
    expect(logs.join("")).toContain("was not cold");
  });

  for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
    test(`${signal}: stop sending, in-flight requests aborted (not failed), the partial result written, exit ${code}`, async () => {
      // Every request streams one token and then stalls: they stay in flight until the stop.
      await using server = startFakeOpenAi({ ttftMs: 5, itlMs: 5, plan: () => "stall" });
      using dir = tempDir("kvcr-vllm-");
      const file = join(dir.path, "partial.json");
      await using child = spawnChild([process.execPath, CLI_ENTRY, "bench", "--url", server.url, "--model", "fake-model", "--num-prompts", "20", "--max-concurrency", "3", "--request-timeout", "120", "--output-json", file]);
      await waitFor(() => server.bodies.length >= 3, { timeoutMs: 10_000, what: "three requests in flight" });
      child.proc.kill(signal);
      const exit = await withTimeout(child.proc.exited, 10_000, `bench to exit after ${signal}`);
      const stderr = await new Response(child.proc.stderr).text();
      expect(exit).toBe(code);
      expect(stderr).toContain("aborted");
      const doc = JSON.parse(readFileSync(file, "utf8"));
      expect(doc).toMatchObject({ completed: 0, failed: 0, aborted: 3, error_breakdown: {} });
      // No request was sent after the stop.
      expect(server.bodies.length).toBe(3);
    });
  }
});
