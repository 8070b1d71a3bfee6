// The mocker's vLLM families after a few requests on a real mocker: names, types, labels (model_name,
// engine = dp rank, worker = the worker id), counters scraped with _total, vLLM's bucket bounds
// printed as Python floats, request_success pre-created for every finish reason, aborts counted.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startMocker, type MockerHandle } from "../../src/roles/mocker/index.ts";
import { ITL_BUCKETS_S, REQUEST_LATENCY_BUCKETS_S, TTFT_BUCKETS_S } from "../../src/roles/mocker/vllm-stats.ts";
import { makeTempDir, waitFor, withTimeout, type TempDir } from "../harness.ts";
import { parsePrometheusText, type Family } from "../prometheus-text.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

let dir: TempDir;
let m: MockerHandle;

beforeAll(async () => {
  dir = await makeTempDir("kvcr-vllm-metrics-");
  m = await startMocker(
    mockerConfig(["--num-workers", "2", "--data-parallel-size", "2", "--block-size", "4", "--num-host-blocks", "32", "--speedup-ratio", "50", "--max-model-len", "4096", "--model-name", "m1", "--discovery-dir", dir.path, "--namespace", "vm"]),
    { logger, env: {} },
  );
  await withTimeout(m.ready, 10_000, "mocker registration");
});

afterAll(async () => {
  await m?.close();
  await dir?.[Symbol.asyncDispose]();
});

async function generate(worker: number, rank: number, tokens: number, maxTokens: number, signal?: AbortSignal): Promise<Response> {
  const body = JSON.stringify({ worker, dp_rank: rank, token_ids: Array.from({ length: tokens }, (_, i) => 1 + (i % 50)), max_tokens: maxTokens });
  return fetch(`${m.httpUrl}/v1/generate`, { method: "POST", body, signal });
}

async function scrape(): Promise<Map<string, Family>> {
  return parsePrometheusText(await (await fetch(`${m.httpUrl}/metrics`)).text());
}

const sameLabels = (a: Record<string, string>, b: Record<string, string>) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

const py = (bounds: readonly number[]) => [...bounds.map((b) => (Number.isInteger(b) ? `${b}.0` : String(b))), "+Inf"];

describe("vLLM families on the mocker", () => {
  test("every family has vLLM's type, labels and buckets", async () => {
    // The same prompt twice on worker 0 rank 0 (the second hits the cache), one on worker 1 rank 1.
    for (const [w, r] of [[0, 0], [0, 0], [1, 1]] as const) await (await generate(w, r, 17, 5)).text();
    const fams = await scrape();
    const id0 = m.workers[0]!.workerId;
    const base0 = { engine: "0", model_name: "m1", worker: id0 };
    const value = (name: string, labels: Record<string, string>, suffix = "") =>
      fams.get(name)!.samples.find((s) => s.name === name + suffix && sameLabels(s.labels, labels))?.value;

    const expected: [string, string][] = [
      ["vllm:num_requests_running", "gauge"], ["vllm:num_requests_waiting", "gauge"], ["vllm:num_requests_waiting_by_reason", "gauge"],
      ["vllm:kv_cache_usage_perc", "gauge"], ["vllm:engine_sleep_state", "gauge"], ["vllm:cache_config_info", "gauge"],
      ["vllm:prefix_cache_queries_total", "counter"], ["vllm:prefix_cache_hits_total", "counter"],
      ["vllm:external_prefix_cache_queries_total", "counter"], ["vllm:external_prefix_cache_hits_total", "counter"],
      ["vllm:mm_cache_queries_total", "counter"], ["vllm:mm_cache_hits_total", "counter"], ["vllm:num_preemptions_total", "counter"],
      ["vllm:prompt_tokens_total", "counter"], ["vllm:prompt_tokens_by_source_total", "counter"], ["vllm:prompt_tokens_cached_total", "counter"],
      ["vllm:generation_tokens_total", "counter"], ["vllm:request_success_total", "counter"],
      ["vllm:time_to_first_token_seconds", "histogram"], ["vllm:inter_token_latency_seconds", "histogram"],
      ["vllm:request_time_per_output_token_seconds", "histogram"], ["vllm:e2e_request_latency_seconds", "histogram"],
      ["vllm:request_queue_time_seconds", "histogram"], ["vllm:request_prefill_time_seconds", "histogram"],
      ["vllm:request_decode_time_seconds", "histogram"], ["vllm:request_inference_time_seconds", "histogram"],
      ["vllm:request_prompt_tokens", "histogram"], ["vllm:request_generation_tokens", "histogram"],
      ["vllm:request_prefill_kv_computed_tokens", "histogram"], ["vllm:request_max_num_generation_tokens", "histogram"],
      ["vllm:request_params_n", "histogram"], ["vllm:request_params_max_tokens", "histogram"], ["vllm:iteration_tokens_total", "histogram"],
    ];
    for (const [name, type] of expected) {
      const f = fams.get(name);
      expect(f, name).toBeDefined();
      expect(f!.type, name).toBe(type);
      // One series (or set of series) per (worker, rank): 2 × 2 engines, each labelled the same way.
      const engines = new Set(f!.samples.map((s) => `${s.labels.worker}/${s.labels.engine}`));
      expect(engines.size, name).toBe(4);
      for (const s of f!.samples) {
        if (name !== "vllm:cache_config_info") expect(s.labels.model_name, name).toBe("m1");
        else expect(s.labels.model_name).toBeUndefined();
        expect(m.workers.map((w) => w.workerId)).toContain(s.labels.worker!);
      }
    }

    const les = (name: string) => fams.get(name)!.samples.filter((s) => s.name === `${name}_bucket` && s.labels.worker === id0 && s.labels.engine === "0").map((s) => s.labels.le);
    expect(les("vllm:time_to_first_token_seconds")).toEqual(py(TTFT_BUCKETS_S));
    expect(les("vllm:time_to_first_token_seconds")).toContain("1.0");
    expect(les("vllm:inter_token_latency_seconds")).toEqual(py(ITL_BUCKETS_S));
    expect(les("vllm:e2e_request_latency_seconds")).toEqual(py(REQUEST_LATENCY_BUCKETS_S));
    expect(les("vllm:iteration_tokens_total")).toEqual(py([1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]));
    // build_1_2_5_buckets(4096) stops at 2000.
    expect(les("vllm:request_prompt_tokens")).toEqual(py([1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000]));
    expect(les("vllm:request_params_n")).toEqual(py([1, 2, 5, 10, 20]));

    // Every finish reason exists from startup; the three requests finished by length.
    const reasons = fams.get("vllm:request_success_total")!.samples.filter((s) => s.labels.worker === id0 && s.labels.engine === "0");
    expect(reasons.map((s) => s.labels.finished_reason).sort()).toEqual(["abort", "error", "length", "repetition", "stop"]);
    expect(value("vllm:request_success_total", { ...base0, finished_reason: "length" })).toBe(2);
    expect(value("vllm:prompt_tokens_total", base0)).toBe(34);
    expect(value("vllm:generation_tokens_total", base0)).toBe(10);
    // The second prompt reused the first one's 4 full blocks (16 tokens) from G1.
    expect(value("vllm:prefix_cache_hits_total", base0)).toBe(16);
    expect(value("vllm:prompt_tokens_by_source_total", { ...base0, source: "local_cache_hit" })).toBe(16);
    expect(value("vllm:prompt_tokens_by_source_total", { ...base0, source: "local_compute" })).toBe(18);
    expect(value("vllm:e2e_request_latency_seconds", base0, "_count")).toBe(2);
    expect(value("vllm:time_to_first_token_seconds", base0, "_count")).toBe(2);
    expect(value("vllm:inter_token_latency_seconds", base0, "_count")).toBe(8);
    expect(value("vllm:request_generation_tokens", base0, "_sum")).toBe(10);
    expect(value("vllm:request_prefill_kv_computed_tokens", base0, "_sum")).toBe(18);
    expect(value("vllm:engine_sleep_state", { ...base0, sleep_state: "awake" })).toBe(1);
    // The host tier is vLLM's offloading connector: its device-to-host copies, by transfer_type.
    const d2h = { ...base0, transfer_type: "GPU_to_CPU" };
    expect(fams.get("vllm:kv_offload_total_bytes_total")!.type).toBe("counter");
    expect(value("vllm:kv_offload_total_bytes_total", d2h)! % (4 * 131_072)).toBe(0); // whole blocks of block_size × kv bytes per token
    expect(value("vllm:kv_offload_total_bytes_total", d2h)).toBeGreaterThan(0);
    expect(value("vllm:kv_offload_size", d2h, "_count")).toBeGreaterThan(0);
    expect(fams.get("vllm:kv_offload_size")!.samples.filter((s) => sameLabels(s.labels, { ...d2h, le: s.labels.le ?? "" })).map((s) => s.labels.le)).toEqual(
      py([1e6, 5e6, 10e6, 20e6, 40e6, 60e6, 80e6, 100e6, 150e6, 200e6]),
    );
    const info = fams.get("vllm:cache_config_info")!.samples.find((s) => s.labels.worker === id0 && s.labels.engine === "0")!;
    expect(info.labels).toMatchObject({ block_size: "4", enable_prefix_caching: "True", engine: "0" });
    expect(info.value).toBe(1);
  });

  test("a request the client abandons counts as finished_reason abort", async () => {
    const id1 = m.workers[1]!.workerId;
    const labels = { engine: "0", finished_reason: "abort", model_name: "m1", worker: id1 };
    const aborts = async () => (await scrape()).get("vllm:request_success_total")!.samples.find((s) => sameLabels(s.labels, labels))!.value;
    expect(await aborts()).toBe(0);
    const ac = new AbortController();
    const res = await generate(1, 0, 8, 4000, ac.signal).catch(() => undefined);
    const reader = res?.body?.getReader();
    await reader?.read(); // the first token is out: the request is running
    ac.abort();
    await waitFor(async () => (await aborts()) === 1, { what: "the abort counted" });
  });
});
