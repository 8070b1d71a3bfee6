// Dynamo's frontend families on the frontend app with a fake worker whose stream the test paces on
// an injected clock: request counts by model / endpoint / request_type / status / error_type,
// active (= deprecated inflight) and queued gauges, TTFT, ITL from the token stream, sequence
// lengths, output tokens, Dynamo's bucket spellings (le="0" first, "1" not "1.0").
import { describe, expect, test } from "bun:test";
import { post, routingState, workerRecord, logger } from "../../../test/routing/fake-fleet.ts";
import { parsePrometheusText, type Family } from "../../../test/prometheus-text.ts";
import { DYNAMO_BUCKETS } from "./dynamo-metrics.ts";
import { createFrontendApp } from "./http-app.ts";
import { FrontendMetrics } from "./metrics.ts";
import { fetchTransport, type GenerateBody } from "./worker-call.ts";

/** A worker whose NDJSON lines the test pushes one read at a time. */
function pacedWorker() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let called!: (body: GenerateBody) => void;
  const call = new Promise<GenerateBody>((resolve) => (called = resolve));
  const enc = new TextEncoder();
  return {
    call,
    fetch: async (_url: string, init: RequestInit) => {
      called(JSON.parse(String(init.body)) as GenerateBody);
      return new Response(new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) }), { headers: { "content-type": "application/x-ndjson" } });
    },
    push: (...lines: object[]) => controller.enqueue(enc.encode(lines.map((l) => JSON.stringify(l) + "\n").join(""))),
    end: () => controller.close(),
  };
}

function frontend(fetchWorker: (url: string, init: RequestInit) => Promise<Response>) {
  let clockMs = 1000;
  const state = routingState("round-robin");
  state.putWorker(workerRecord("a"));
  const metrics = new FrontendMetrics({ now: () => clockMs, migrationLimit: 3 });
  const app = createFrontendApp({
    state, metrics, logger, maxRequestBytes: 1 << 16, maxOutputTokens: 1000, maxPromptBytes: 1 << 20, bodyTimeoutMs: 30_000, stallTimeoutMs: 60_000,
    callWorker: fetchTransport(fetchWorker), now: () => clockMs, wallSeconds: () => 1_700_000_000, idPrefix: "t",
  });
  const scrape = async () => parsePrometheusText(await (await app.fetch(new Request("http://frontend/metrics"))).text());
  return { app, scrape, advance: (ms: number) => void (clockMs += ms) };
}

const value = (fams: Map<string, Family>, name: string, labels: Record<string, string>, suffix = "") =>
  fams.get(name)?.samples.find((s) => s.name === name + suffix && JSON.stringify(Object.entries(s.labels).sort()) === JSON.stringify(Object.entries(labels).sort()))?.value;

/** Lets the app's pending reads run. */
const settle = () => new Promise((r) => setTimeout(r, 5));

describe("Dynamo frontend families", () => {
  test("a streamed chat request: started, queued until its first token, TTFT and ITL from the stream, success", async () => {
    const w = pacedWorker();
    const f = frontend(w.fetch);
    const res = await (async () => {
      const pending = f.app.fetch(post("/v1/chat/completions", { model: "m", stream: true, max_tokens: 3, messages: [{ role: "user", content: "hello there" }] }));
      await w.call;
      return pending;
    })();
    let fams = await f.scrape();
    expect(value(fams, "dynamo_frontend_requests_started_total", { endpoint: "chat_completions", model: "m", request_type: "stream" })).toBe(1);
    expect(value(fams, "dynamo_frontend_active_requests", { model: "m" })).toBe(1);
    expect(value(fams, "dynamo_frontend_inflight_requests", { model: "m" })).toBe(1);
    expect(value(fams, "dynamo_frontend_queued_requests", { model: "m" })).toBe(1);
    const reader = res.body!.getReader();
    const read = reader.read();
    f.advance(100);
    w.push({ token_id: 1 });
    await read;
    fams = await f.scrape();
    expect(value(fams, "dynamo_frontend_queued_requests", { model: "m" })).toBe(0);
    expect(value(fams, "dynamo_frontend_time_to_first_token_seconds", { model: "m" }, "_sum")).toBeCloseTo(0.1, 9);
    // Two more tokens in one worker read 20 ms later: ITL 10 ms each, observed twice.
    f.advance(20);
    w.push({ token_id: 2 }, { token_id: 3 });
    await settle();
    f.advance(1);
    w.push({ finish_reason: "length", prompt_tokens: 9, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: 3 });
    w.end();
    while (!(await reader.read()).done);
    fams = await f.scrape();
    const itl = (le: string) => value(fams, "dynamo_frontend_inter_token_latency_seconds", { le, model: "m" }, "_bucket");
    expect(itl("0.0067")).toBe(0);
    expect(itl("0.013")).toBe(2);
    expect(value(fams, "dynamo_frontend_inter_token_latency_seconds", { model: "m" }, "_count")).toBe(2);
    expect(value(fams, "dynamo_frontend_output_tokens_total", { model: "m" })).toBe(3);
    expect(value(fams, "dynamo_frontend_output_sequence_tokens", { model: "m" }, "_sum")).toBe(3);
    expect(value(fams, "dynamo_frontend_input_sequence_tokens", { model: "m" }, "_count")).toBe(1);
    expect(value(fams, "dynamo_frontend_cached_tokens", { model: "m" }, "_count")).toBe(1);
    expect(value(fams, "dynamo_frontend_request_duration_seconds", { model: "m" }, "_sum")).toBeCloseTo(0.121, 9);
    expect(value(fams, "dynamo_frontend_requests_total", { endpoint: "chat_completions", error_type: "", model: "m", request_type: "stream", status: "success" })).toBe(1);
    expect(value(fams, "dynamo_frontend_active_requests", { model: "m" })).toBe(0);
    expect(value(fams, "dynamo_frontend_model_migration_limit", { model: "m" })).toBe(3);
    expect(value(fams, "dynamo_frontend_model_kv_cache_block_size", { model: "m" })).toBeGreaterThan(0);
    // The router's view of each (worker, rank), Dynamo's labels.
    expect(fams.get("dynamo_frontend_worker_active_decode_blocks")!.samples[0]!.labels).toEqual({ dp_rank: "0", worker_id: "a", worker_type: "decode" });
    expect(fams.get("dynamo_router_overhead_total_ms")!.samples.at(-1)!.value).toBe(1);
  });

  test("errors are counted with Dynamo's status and error_type; buckets are printed as Dynamo prints them", async () => {
    const w = pacedWorker();
    const f = frontend(w.fetch);
    expect((await f.app.fetch(post("/v1/completions", { model: "zz", prompt: "x" }))).status).toBe(404);
    // A unary request, so the per-model histograms have a series.
    const pending = f.app.fetch(post("/v1/completions", { model: "m", prompt: "x", max_tokens: 1 }));
    await w.call;
    w.push({ token_id: 1 }, { finish_reason: "length", prompt_tokens: 1, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: 1 });
    w.end();
    expect((await pending).status).toBe(200);
    const fams = await f.scrape();
    expect(value(fams, "dynamo_frontend_requests_total", { endpoint: "completions", error_type: "", model: "m", request_type: "unary", status: "success" })).toBe(1);
    expect(value(fams, "dynamo_frontend_requests_total", { endpoint: "completions", error_type: "not_found", model: "zz", request_type: "unary", status: "error" })).toBe(1);
    expect(value(fams, "dynamo_frontend_active_requests", { model: "zz" })).toBe(0);
    const les = (name: string) => fams.get(name)!.samples.filter((s) => s.name === `${name}_bucket` && s.labels.model === "m").map((s) => s.labels.le);
    const rust = (b: readonly number[]) => [...b.map(String), "+Inf"];
    expect(les("dynamo_frontend_time_to_first_token_seconds")).toEqual(rust(DYNAMO_BUCKETS.ttftS));
    expect(les("dynamo_frontend_time_to_first_token_seconds").slice(0, 2)).toEqual(["0", "0.0022"]);
    expect(les("dynamo_frontend_time_to_first_token_seconds")).toContain("1");
    expect(les("dynamo_frontend_request_duration_seconds")).toEqual(rust(DYNAMO_BUCKETS.requestDurationS));
    for (const [name, type] of [["dynamo_frontend_requests_total", "counter"], ["dynamo_frontend_output_tokens_total", "counter"], ["dynamo_frontend_queued_requests", "gauge"], ["dynamo_frontend_disconnected_clients", "gauge"], ["dynamo_frontend_inter_token_latency_seconds", "histogram"], ["dynamo_frontend_input_sequence_tokens", "histogram"], ["dynamo_frontend_output_sequence_tokens", "histogram"]] as const) {
      expect(fams.get(name)?.type, name).toBe(type);
    }
  });

  test("a client that leaves mid-stream is a cancellation and a disconnected client", async () => {
    const w = pacedWorker();
    const f = frontend(w.fetch);
    const pending = f.app.fetch(post("/v1/completions", { model: "m", stream: true, max_tokens: 5, prompt: "abc" }));
    await w.call;
    const res = await pending;
    const reader = res.body!.getReader();
    w.push({ token_id: 1 });
    await reader.read();
    await reader.cancel();
    const fams = await f.scrape();
    expect(value(fams, "dynamo_frontend_requests_total", { endpoint: "completions", error_type: "cancelled", model: "m", request_type: "stream", status: "error" })).toBe(1);
    expect(value(fams, "dynamo_frontend_model_cancellation_total", { endpoint: "completions", model: "m", request_type: "stream" })).toBe(1);
    expect(value(fams, "dynamo_frontend_disconnected_clients", {})).toBe(1);
  });
});
