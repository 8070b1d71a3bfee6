import { afterEach, expect, test } from "bun:test";
import { waitFor } from "../../../test/harness.ts";
import type { GenerateRequest } from "../../protocol/generate.ts";
import { serveHttp, type HttpServer } from "../../transport/http/server.ts";
import { createMockerFetch, type WorkerPool } from "./http-app.ts";
import type { SubmitOutcome } from "./generation.ts";
import type { TokenSink } from "./token-stream.ts";

/** A pool the test drives by hand: it records requests and cancellations, and keeps the sinks. */
class FakePool implements WorkerPool {
  readonly sinks = new Map<string, TokenSink>();
  readonly cancelled: string[] = [];
  readonly submitted: GenerateRequest[] = [];
  healthy = () => true;
  submit(req: GenerateRequest, sink: TokenSink): SubmitOutcome {
    if (req.worker > 0) return { ok: false, status: 404, message: `unknown worker ${req.worker}` };
    const id = req.requestId ?? `req-${this.submitted.length}`;
    this.submitted.push(req);
    this.sinks.set(id, sink);
    return { ok: true, requestId: id };
  }
  cancel(id: string): void {
    this.cancelled.push(id);
  }
  metrics = () => [];
}

let server: HttpServer | undefined;
afterEach(async () => {
  await server?.stop(true);
  server = undefined;
});

function serve(pool: WorkerPool): string {
  server = serveHttp({ host: "127.0.0.1", port: 0, fetch: createMockerFetch(pool, { maxPromptTokens: 100, maxOutputTokens: 100 }) });
  return server.url;
}
const post = (url: string, body: unknown, signal?: AbortSignal) => fetch(`${url}/v1/generate`, { method: "POST", body: JSON.stringify(body), signal });
/** Bun sends a streamed response's headers with its first bytes, so the test waits for the sink. */
const sinkOf = (pool: FakePool, id: string) => waitFor(() => pool.sinks.get(id), { timeoutMs: 5000, what: `request ${id} to reach the pool` });

test("a request finished before its first output is sent is one plain body with a content-length", async () => {
  const pool = new FakePool();
  const url = serve(pool);
  const quick = post(url, { worker: 0, token_ids: [1], max_tokens: 1, request_id: "quick" });
  const sink = await sinkOf(pool, "quick");
  sink.tokens([7]);
  sink.finish({ finish_reason: "length", prompt_tokens: 1, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: 1 });
  const whole = await quick;
  const body = '{"token_id":7}\n{"finish_reason":"length","prompt_tokens":1,"cached_tokens":0,"host_loaded_tokens":0,"completion_tokens":1}\n';
  expect(whole.headers.get("content-type")).toBe("application/x-ndjson");
  expect(whole.headers.get("content-length")).toBe(String(body.length));
  expect(await whole.text()).toBe(body);
});

test("a running request's body is chunked", async () => {
  const pool = new FakePool();
  const url = serve(pool);
  const running = post(url, { worker: 0, token_ids: [1], max_tokens: 2, request_id: "running" });
  const runningSink = await sinkOf(pool, "running");
  runningSink.tokens([8]);
  const res = await running;
  expect(res.headers.get("content-length")).toBeNull();
  expect(res.headers.get("transfer-encoding")).toBe("chunked");
  runningSink.finish({ finish_reason: "length", prompt_tokens: 1, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: 2 });
  expect((await res.text()).split("\n")[0]).toBe('{"token_id":8}');
});

test("a stream carries one NDJSON line per token, then the summary line", async () => {
  const pool = new FakePool();
  const url = serve(pool);
  const response = post(url, { worker: 0, token_ids: [1, 2], max_tokens: 3, request_id: "a" });
  const sink = await sinkOf(pool, "a");
  sink.tokens([11]);
  const res = await response;
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/x-ndjson");
  sink.tokens([12]);
  sink.tokens([4_294_967_295]);
  sink.finish({ finish_reason: "length", prompt_tokens: 2, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: 3 });
  const lines = (await res.text()).split("\n");
  expect(lines).toEqual([
    '{"token_id":11}',
    '{"token_id":12}',
    '{"token_id":4294967295}',
    '{"finish_reason":"length","prompt_tokens":2,"cached_tokens":0,"host_loaded_tokens":0,"completion_tokens":3}',
    "",
  ]);
  expect(pool.cancelled).toEqual([]);
});

test("a client that disconnects mid-stream cancels its request once", async () => {
  const pool = new FakePool();
  const url = serve(pool);
  const abort = new AbortController();
  const response = post(url, { worker: 0, token_ids: [1], max_tokens: 50, request_id: "gone" }, abort.signal);
  (await sinkOf(pool, "gone")).tokens([7]);
  const reader = (await response).body!.getReader();
  const first = await reader.read();
  expect(new TextDecoder().decode(first.value)).toBe('{"token_id":7}\n');
  abort.abort();
  await waitFor(() => pool.cancelled.length > 0, { timeoutMs: 5000, what: "the request to be cancelled" });
  // Tokens the loop still delivers for it go nowhere and do not throw.
  pool.sinks.get("gone")!.tokens([8]);
  await new Promise((r) => setImmediate(r));
  expect(pool.cancelled).toEqual(["gone"]);
});

test("bad bodies get 400 and an unknown worker 404, with a JSON error naming the problem", async () => {
  const pool = new FakePool();
  const url = serve(pool);
  const bad = await post(url, { worker: 0, token_ids: [], max_tokens: 1 });
  expect(bad.status).toBe(400);
  expect(((await bad.json()) as { error: { message: string } }).error.message).toContain("token_ids");
  const notJson = await fetch(`${url}/v1/generate`, { method: "POST", body: "{" });
  expect(notJson.status).toBe(400);
  const unknown = await post(url, { worker: 3, token_ids: [1], max_tokens: 1 });
  expect(unknown.status).toBe(404);
  expect(((await unknown.json()) as { error: { message: string } }).error.message).toBe("unknown worker 3");
  expect(pool.submitted).toHaveLength(0);
});
