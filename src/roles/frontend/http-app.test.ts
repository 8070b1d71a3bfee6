// The frontend app without a port: every kind of bad HTTP input gets OpenAI's error JSON with its
// status and leaves the app serving; worker failures map to 502 / 504; SSE framing.
import { describe, expect, spyOn, test } from "bun:test";
import { app, ndjsonWorker, post, routingState, workerRecord } from "../../../test/routing/fake-fleet.ts";
import { waitFor } from "../../../test/harness.ts";
import { createLogger } from "../../lib/logger.ts";
import { KeepAliveClient } from "../../transport/http/keepalive-client.ts";
import { fetchTransport, keepAliveTransport, type FetchLike, type GenerateBody } from "./worker-call.ts";

function fleet(fetchWorker: FetchLike = ndjsonWorker(), over: Parameters<typeof app>[2] = {}) {
  const state = routingState("round-robin");
  state.putWorker(workerRecord("a"));
  return { state, app: app(state, fetchWorker, over) };
}

async function expectOpenAiError(res: Response, status: number, messagePart: string, param?: string | null) {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { error: Record<string, unknown> };
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"]);
  expect(String(body.error.message)).toContain(messagePart);
  if (param !== undefined) expect(body.error.param).toBe(param);
}

const chat = (over: Record<string, unknown> = {}) => ({ model: "m", messages: [{ role: "user", content: "hi" }], ...over });
const cmpl = (over: Record<string, unknown> = {}) => ({ model: "m", prompt: "hi", ...over });

describe("bad HTTP input → OpenAI error JSON, and the app keeps serving", () => {
  const cases: [name: string, path: string, body: unknown, status: number, part: string, param?: string][] = [
    ["not JSON", "/v1/chat/completions", "{nope", 400, "not valid JSON", "body"],
    ["a JSON array", "/v1/completions", "[1,2]", 400, "JSON object", "body"],
    ["empty body", "/v1/completions", "", 400, "not valid JSON", "body"],
    ["no model", "/v1/completions", { prompt: "x" }, 400, "model: expected a non-empty string", "model"],
    ["model not a string", "/v1/chat/completions", chat({ model: 3 }), 400, "model", "model"],
    ["no messages", "/v1/chat/completions", { model: "m" }, 400, "messages: expected a non-empty array", "messages"],
    ["empty messages", "/v1/chat/completions", chat({ messages: [] }), 400, "messages", "messages"],
    ["message without role", "/v1/chat/completions", chat({ messages: [{ content: "x" }] }), 400, "messages[0].role", "messages[0].role"],
    ["message content a number", "/v1/chat/completions", chat({ messages: [{ role: "user", content: 5 }] }), 400, "messages[0].content", "messages[0].content"],
    ["image content part", "/v1/chat/completions", chat({ messages: [{ role: "user", content: [{ type: "image_url" }] }] }), 400, "text", "messages[0].content[0]"],
    ["no prompt", "/v1/completions", { model: "m" }, 400, "prompt: expected", "prompt"],
    ["empty prompt", "/v1/completions", cmpl({ prompt: "" }), 400, "prompt: must not be empty", "prompt"],
    ["batch of prompts", "/v1/completions", cmpl({ prompt: ["a", "b"] }), 400, "batch of 2 prompts", "prompt"],
    ["negative token id", "/v1/completions", cmpl({ prompt: [1, -2] }), 400, "prompt[1]", "prompt"],
    ["token id too big", "/v1/completions", cmpl({ prompt: [2 ** 32] }), 400, "prompt[0]", "prompt"],
    ["fractional token id", "/v1/completions", cmpl({ prompt: [1.5] }), 400, "prompt[0]", "prompt"],
    ["max_tokens 0", "/v1/completions", cmpl({ max_tokens: 0 }), 400, "max_tokens: expected an integer from 1 to 1000", "max_tokens"],
    ["max_tokens above the limit", "/v1/completions", cmpl({ max_tokens: 1001 }), 400, "max_tokens", "max_tokens"],
    ["max_completion_tokens a string", "/v1/chat/completions", chat({ max_completion_tokens: "5" }), 400, "max_completion_tokens", "max_completion_tokens"],
    ["n = 2", "/v1/chat/completions", chat({ n: 2 }), 400, "n: only 1", "n"],
    ["stream not a boolean", "/v1/completions", cmpl({ stream: "yes" }), 400, "stream: expected true or false", "stream"],
    ["stream_options not an object", "/v1/completions", cmpl({ stream_options: 1 }), 400, "stream_options", "stream_options"],
    ["include_usage not a boolean", "/v1/completions", cmpl({ stream_options: { include_usage: 1 } }), 400, "include_usage", "stream_options.include_usage"],
    ["temperature a string", "/v1/chat/completions", chat({ temperature: "hot" }), 400, "temperature: expected a number from 0 to 2", "temperature"],
    ["temperature above 2", "/v1/completions", cmpl({ temperature: 2.5 }), 400, "temperature", "temperature"],
    ["temperature negative", "/v1/completions", cmpl({ temperature: -0.1 }), 400, "temperature", "temperature"],
    ["top_p 0", "/v1/chat/completions", chat({ top_p: 0 }), 400, "top_p: expected a number above 0", "top_p"],
    ["top_p above 1", "/v1/completions", cmpl({ top_p: 1.01 }), 400, "top_p", "top_p"],
    ["n a string", "/v1/completions", cmpl({ n: "1" }), 400, "n: only 1", "n"],
    ["stop a number", "/v1/chat/completions", chat({ stop: 3 }), 400, "stop: expected a string or an array of strings", "stop"],
    ["stop an array with a number", "/v1/completions", cmpl({ stop: ["a", 1] }), 400, "stop", "stop"],
    ["seed fractional", "/v1/completions", cmpl({ seed: 1.5 }), 400, "seed: expected an integer", "seed"],
    ["seed a string", "/v1/chat/completions", chat({ seed: "7" }), 400, "seed", "seed"],
    ["presence_penalty below -2", "/v1/chat/completions", chat({ presence_penalty: -3 }), 400, "presence_penalty: expected a number from -2 to 2", "presence_penalty"],
    ["frequency_penalty above 2", "/v1/completions", cmpl({ frequency_penalty: 2.1 }), 400, "frequency_penalty", "frequency_penalty"],
    ["chat logprobs a number", "/v1/chat/completions", chat({ logprobs: 1 }), 400, "logprobs: expected true or false", "logprobs"],
    ["completions logprobs a boolean", "/v1/completions", cmpl({ logprobs: true }), 400, "logprobs: expected an integer from 0 to 20", "logprobs"],
    ["top_logprobs above 20", "/v1/chat/completions", chat({ top_logprobs: 21 }), 400, "top_logprobs", "top_logprobs"],
    ["user a number", "/v1/chat/completions", chat({ user: 42 }), 400, "user: expected a string", "user"],
    ["logit_bias out of range", "/v1/completions", cmpl({ logit_bias: { "5": 200 } }), 400, "logit_bias", "logit_bias"],
    ["ignore_eos a string", "/v1/completions", cmpl({ ignore_eos: "true" }), 400, "ignore_eos", "ignore_eos"],
    ["echo a number", "/v1/completions", cmpl({ echo: 1 }), 400, "echo", "echo"],
    ["unknown model", "/v1/completions", cmpl({ model: "zz" }), 404, "does not exist", "model"],
    ["too large", "/v1/completions", cmpl({ prompt: "x".repeat(5000) }), 413, "exceeds the limit of 4096 bytes"],
  ];
  for (const [name, path, body, status, part, param] of cases) {
    test(name, async () => {
      const f = fleet();
      await expectOpenAiError(await f.app.fetch(post(path, body)), status, part, param);
      expect((await f.app.fetch(new Request("http://frontend/health"))).status).toBe(200);
      expect((await f.app.fetch(post("/v1/completions", cmpl({ max_tokens: 2 })))).status).toBe(200);
    });
  }

  test("every sampling field in range (and null, and unknown extra fields) is accepted", async () => {
    const f = fleet();
    const sampling = { temperature: 0, top_p: 1, n: 1, stop: ["\n", "END"], seed: -3, presence_penalty: -2, frequency_penalty: 2, user: "u", logit_bias: { "7": -100 }, ignore_eos: true };
    expect((await f.app.fetch(post("/v1/chat/completions", chat({ ...sampling, logprobs: true, top_logprobs: 5, max_completion_tokens: 2, tools_unknown: [1] })))).status).toBe(200);
    expect((await f.app.fetch(post("/v1/completions", cmpl({ ...sampling, stop: "x", logprobs: 2, echo: false, max_tokens: 2, some_vendor_field: { a: 1 } })))).status).toBe(200);
    const nulls = { temperature: null, top_p: null, stop: null, seed: null, presence_penalty: null, frequency_penalty: null, logprobs: null, user: null, stream_options: null };
    expect((await f.app.fetch(post("/v1/chat/completions", chat(nulls)))).status).toBe(200);
  });

  test("a streamed body over the limit (no content-length) is cut off with 413", async () => {
    const f = fleet();
    const chunks = new ReadableStream<Uint8Array>({
      pull(c) {
        c.enqueue(new Uint8Array(1024).fill(32));
      },
    });
    await expectOpenAiError(await f.app.fetch(new Request("http://frontend/v1/completions", { method: "POST", body: chunks })), 413, "exceeds");
  });

  test("wrong method 405, unknown route 404, both in the error shape", async () => {
    const f = fleet();
    await expectOpenAiError(await f.app.fetch(new Request("http://frontend/v1/completions")), 405, "use POST");
    await expectOpenAiError(await f.app.fetch(post("/v1/models", {})), 405, "use GET");
    await expectOpenAiError(await f.app.fetch(new Request("http://frontend/v2/nothing")), 404, "no route");
  });

  test("/metrics counts requests by route and status", async () => {
    const f = fleet();
    await f.app.fetch(post("/v1/completions", cmpl()));
    await f.app.fetch(post("/v1/completions", "{"));
    const text = await (await f.app.fetch(new Request("http://frontend/metrics"))).text();
    expect(text).toContain('kvcr_frontend_requests_total{route="/v1/completions",status="200"} 1');
    expect(text).toContain('kvcr_frontend_requests_total{route="/v1/completions",status="400"} 1');
    expect(text).toContain('dynamo_frontend_worker_active_decode_blocks{dp_rank="0",worker_id="a",worker_type="decode"} 0');
    expect(text).toContain("kvcr_frontend_routing_decision_seconds_count 1");
    expect(text).toContain('kvcr_frontend_index_blocks{tier="device"} 0');
    for (const family of ["dynamo_frontend_worker_active_prefill_tokens", "kvcr_frontend_worker_busy", "kvcr_frontend_rejected_requests_total", "kvcr_frontend_orphan_stores_total"]) {
      expect(text).toContain(`# TYPE ${family} `);
    }
  });
});

describe("worker failures", () => {
  test("the worker answers an error status: 502 naming the worker", async () => {
    const f = fleet(async () => Response.json({ error: "boom" }, { status: 500 }));
    await expectOpenAiError(await f.app.fetch(post("/v1/completions", cmpl())), 502, "worker a answered 500");
  });

  test("the worker refuses the request (400): 400 with the worker's reason", async () => {
    const f = fleet(async () => Response.json({ error: { message: "prompt needs 9 KV blocks, more than the 8 this rank has" } }, { status: 400 }));
    await expectOpenAiError(await f.app.fetch(post("/v1/completions", cmpl())), 400, "worker a refused the request: prompt needs 9 KV blocks");
  });

  test("the worker is unreachable: 502", async () => {
    const f = fleet(async () => {
      throw new Error("connection refused");
    });
    await expectOpenAiError(await f.app.fetch(post("/v1/completions", cmpl())), 502, "worker a failed: connection refused");
  });

  const hanging: FetchLike = async (_url, init) =>
    new Response(
      new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode('{"token_id":1}\n'));
          init.signal!.addEventListener("abort", () => c.error(init.signal!.reason));
        },
      }),
    );

  test("the worker stalls: 504 after the stall timeout", async () => {
    const f = fleet(hanging, { stallTimeoutMs: 30 });
    await expectOpenAiError(await f.app.fetch(post("/v1/completions", cmpl())), 504, "sent nothing for 30 ms");
  });

  test("the worker accepts the request and never answers (no head): 504 after the stall timeout", async () => {
    const silent: FetchLike = (_url, init) => new Promise((_, reject) => init.signal!.addEventListener("abort", () => reject(init.signal!.reason)));
    const f = fleet(silent, { stallTimeoutMs: 30 });
    await expectOpenAiError(await f.app.fetch(post("/v1/completions", cmpl())), 504, "sent nothing for 30 ms");
  });

  test("the worker stalls mid-stream: an error event naming the stall ends the SSE stream (no [DONE])", async () => {
    const f = fleet(hanging, { stallTimeoutMs: 30 });
    const res = await f.app.fetch(post("/v1/chat/completions", chat({ stream: true })));
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toContain("sent nothing for 30 ms");
    expect(body).not.toContain("[DONE]");
  });

  test("a client slow to read a stream is not taken for a stalled worker (keep-alive transport)", async () => {
    // A real worker streams 8 token lines 5 ms apart; the client reads nothing for 4 stall timeouts.
    const lines = (body: GenerateBody) => [
      ...Array.from({ length: 8 }, (_, i) => JSON.stringify({ token_id: 100 + i })),
      JSON.stringify({ finish_reason: "length", prompt_tokens: body.token_ids.length, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: 8 }),
    ];
    let workerDone = false;
    const worker = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (req) => {
        const out = lines((await req.json()) as GenerateBody);
        return new Response(
          new ReadableStream({
            async pull(c) {
              await Bun.sleep(5); // the worker's pace
              const line = out.shift();
              if (line === undefined) {
                workerDone = true;
                return c.close();
              }
              c.enqueue(new TextEncoder().encode(line + "\n"));
            },
          }),
        );
      },
    });
    const client = new KeepAliveClient();
    try {
      const state = routingState("round-robin");
      state.putWorker(workerRecord("a", { request_url: `http://127.0.0.1:${worker.port}/v1/generate` }));
      const f = app(state, ndjsonWorker(), { stallTimeoutMs: 100, callWorker: keepAliveTransport(client, fetchTransport(fetch)) });
      const res = await f.fetch(post("/v1/completions", cmpl({ stream: true, max_tokens: 8 })));
      expect(res.status).toBe(200);
      await waitFor(() => workerDone, { what: "the worker to send its whole answer" });
      // The client stays idle for 4 stall timeouts more: a watch counting its idleness would fire.
      const idleFrom = performance.now();
      await waitFor(() => performance.now() - idleFrom >= 400, { what: "four stall timeouts of client idleness" });
      const body = await res.text();
      expect(body).not.toContain("sent nothing");
      expect(body.match(/"text"/g)?.length).toBe(9); // 8 tokens and the finish chunk
      expect(body).toEndWith("data: [DONE]\n\n");
    } finally {
      client.close();
      await worker.stop(true);
    }
  });

  test("the worker vanishes mid-request: 502, its load released", async () => {
    const f = fleet(hanging);
    const pending = f.app.fetch(post("/v1/completions", cmpl({ prompt: [1, 2, 3, 4, 5, 6, 7, 8, 9] })));
    await waitFor(() => f.state.workerList()[0]!.inflight.size > 0, { what: "the request in flight" });
    const router = f.state.routerOf("m")!;
    const rank = f.state.rankIdOf("a", 0);
    expect(router.activeBlocksOf(rank)).toBe(2); // 9 tokens: 2 full blocks of 4
    const gone = f.state.removeWorker("a")!;
    await expectOpenAiError(await pending, 502, "worker a left while the request was in flight");
    expect(gone.inflight.size).toBe(0);
    expect([router.activeBlocksOf(rank), router.activePrefillTokensOf(rank)]).toEqual([0, 0]);
  });

  test("the worker vanishes mid-stream: an error event ends the SSE stream (no [DONE])", async () => {
    const f = fleet(hanging);
    const res = await f.app.fetch(post("/v1/chat/completions", chat({ stream: true })));
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toStartWith('data: {"id":"chatcmpl-t-1","object":"chat.completion.chunk"');
    f.state.removeWorker("a");
    let rest = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toContain('"code":"worker_gone"');
    expect(rest).not.toContain("[DONE]");
  });

  test("a client that goes away mid-stream aborts the worker request", async () => {
    let signal: AbortSignal | undefined;
    const f = fleet(async (url, init) => {
      signal = init.signal!;
      return hanging(url, init);
    });
    const res = await f.app.fetch(post("/v1/completions", cmpl({ stream: true })));
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    expect(signal!.aborted).toBe(true);
    expect(f.state.workerList()[0]!.inflight.size).toBe(0);
  });
});

describe("the router's view of load", () => {
  /** A worker that answers once `go` resolves: one token, then it hangs until aborted. */
  const gated = (go: Promise<void>): FetchLike => async (_url, init) => {
    await go;
    return new Response(
      new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode('{"token_id":1}\n'));
          init.signal!.addEventListener("abort", () => c.error(init.signal!.reason));
        },
      }),
    );
  };
  const prompt = cmpl({ prompt: [1, 2, 3, 4, 5, 6, 7, 8, 9], stream: true });

  test("a routed request holds its prefill tokens until its first token and its blocks until the client goes away", async () => {
    let open!: () => void;
    const f = fleet(gated(new Promise<void>((r) => (open = r))));
    const router = f.state.routerOf("m")!;
    const rankId = f.state.workerList()[0]!.rankIds[0]!;
    const pending = f.app.fetch(post("/v1/completions", prompt));
    await waitFor(() => router.activePrefillTokensOf(rankId) === 9, { what: "the routed prompt's prefill counted" });
    expect(router.activeBlocksOf(rankId)).toBe(2); // 9 tokens: 2 full blocks of 4
    open();
    const reader = (await pending).body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('"text"');
    expect([router.activePrefillTokensOf(rankId), router.activeBlocksOf(rankId)]).toEqual([0, 2]);
    await reader.cancel();
    expect(router.activeBlocksOf(rankId)).toBe(0);
  });

  test("every worker busy → 529 (or the configured status) in OpenAI's shape naming the thresholds, until the load drops", async () => {
    for (const [given, status] of [[undefined, 529], [503, 503]] as const) {
      let open!: () => void;
      const state = routingState("kv", { router: { busy: { activePrefillTokens: 4 } }, ...(given ? { overloadStatus: given } : {}) }); // 529 by default
      state.putWorker(workerRecord("a", { data_parallel_size: 2 }));
      const a = app(state, gated(new Promise<void>((r) => (open = r))));
      const inflight = [a.fetch(post("/v1/completions", prompt)), a.fetch(post("/v1/completions", prompt))];
      const router = state.routerOf("m")!;
      await waitFor(() => state.workerList()[0]!.rankIds.every((s) => router.isBusy(s)), { what: "both ranks busy" });
      const res = await a.fetch(post("/v1/completions", prompt));
      await expectOpenAiError(res, status, "Service temporarily overloaded");
      expect(router.rejected).toBe(1);
      const metrics = await (await a.fetch(new Request("http://frontend/metrics"))).text();
      expect(metrics).toContain('kvcr_frontend_worker_busy{worker="a",dp_rank="1"} 1');
      expect(metrics).toContain('dynamo_frontend_worker_active_prefill_tokens{dp_rank="0",worker_id="a",worker_type="decode"} 9');
      expect(metrics).toContain('kvcr_frontend_rejected_requests_total{model="m"} 1');
      expect(metrics).toContain(`kvcr_frontend_requests_total{route="/v1/completions",status="${status}"} 1`);
      open();
      for (const r of await Promise.all(inflight)) await r.body!.getReader().read(); // first tokens out: not busy
      const again = await a.fetch(post("/v1/completions", prompt));
      expect(again.status).toBe(200);
      await again.body!.cancel();
      for (const r of await Promise.all(inflight)) await r.body!.cancel().catch(() => {});
    }
  });
});

describe("the router's queue (--router-queue-threshold)", () => {
  test("while every worker is saturated requests are held, oldest first, until first tokens arrive or their client leaves (499)", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const worker: FetchLike = async (url, init) => {
      await gate;
      return ndjsonWorker()(url, init);
    };
    // One rank with a 16-token budget, held above half of it: one 9-token prompt saturates it.
    const state = routingState("kv", { router: { queueThreshold: 0.5 } });
    state.putWorker(workerRecord("a", { max_num_batched_tokens: 16 }));
    const a = app(state, worker);
    const body = cmpl({ prompt: [1, 2, 3, 4, 5, 6, 7, 8, 9], max_tokens: 1 });
    const first = a.fetch(post("/v1/completions", body));
    await waitFor(() => state.routerOf("m")!.saturated(), { what: "the worker saturated" });
    const second = a.fetch(post("/v1/completions", body));
    const leaving = new AbortController();
    const third = a.fetch(post("/v1/completions", body, { signal: leaving.signal }));
    await waitFor(() => state.heldCount === 2, { what: "two requests held" });
    expect(await (await a.fetch(new Request("http://frontend/metrics"))).text()).toContain("kvcr_frontend_queued_requests 2");
    leaving.abort();
    await expectOpenAiError(await third, 499, "went away while its request was held");
    expect(state.heldCount).toBe(1);
    open();
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect(state.heldCount).toBe(0);
  });
});

describe("prompt size and request bodies", () => {
  test("a 2 MiB prompt is refused with 400 naming prompt / messages before anything is tokenized", async () => {
    const tokenizer = await import("../../core/text/tokenizer.ts");
    const spy = spyOn(tokenizer, "tokenize");
    try {
      const f = fleet(ndjsonWorker(), { maxRequestBytes: 8 << 20 });
      const big = "word ".repeat((2 << 20) / 5);
      await expectOpenAiError(await f.app.fetch(post("/v1/completions", cmpl({ prompt: big }))), 400, "exceed the limit of 1048576 bytes (--max-prompt-bytes)", "prompt");
      // Chat counts all messages' content together: two halves of 600 KiB each are over.
      const half = "é".repeat(300 * 1024); // 2 UTF-8 bytes each
      const messages = [{ role: "user", content: half }, { role: "user", content: [{ type: "text", text: half }] }];
      await expectOpenAiError(await f.app.fetch(post("/v1/chat/completions", chat({ messages }))), 400, "--max-prompt-bytes", "messages");
      expect(spy).not.toHaveBeenCalled();
      // A prompt within the limit is tokenized as before.
      expect((await f.app.fetch(post("/v1/completions", cmpl({ max_tokens: 2 })))).status).toBe(200);
      expect(spy).toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  test("a body that stops arriving gets 408 in the error shape after --body-timeout-ms, and reading stops", async () => {
    const f = fleet(ndjsonWorker(), { bodyTimeoutMs: 50 });
    let cancelled = false;
    const stalled = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"model": "m", "prompt": "hel'));
      },
      cancel() {
        cancelled = true;
      },
    });
    const res = await f.app.fetch(new Request("http://frontend/v1/completions", { method: "POST", body: stalled }));
    expect(res.headers.get("connection")).toBe("close");
    await expectOpenAiError(res, 408, "--body-timeout-ms");
    expect(cancelled).toBe(true);
    expect((await f.app.fetch(post("/v1/completions", cmpl({ max_tokens: 2 })))).status).toBe(200);
  });

  test("a client that aborts mid-body gets no 500 and no error log, only a debug line", async () => {
    const lines: string[] = [];
    const stream = { write: (t: string) => (lines.push(t), true) } as unknown as NodeJS.WritableStream;
    const f = fleet(ndjsonWorker(), { logger: createLogger({ level: "debug", stream, format: "json" }) });
    const aborting = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"model": "m", "prompt": "hel'));
        setTimeout(() => c.error(new Error("")), 5);
      },
    });
    const res = await f.app.fetch(new Request("http://frontend/v1/completions", { method: "POST", body: aborting }));
    expect(res.status).not.toBe(500);
    await expectOpenAiError(res, 499, "while sending its body");
    const levels = lines.map((l) => (JSON.parse(l) as { level: string }).level);
    expect(levels).not.toContain("error");
    expect(lines.some((l) => l.includes("went away while sending its body"))).toBe(true);
    expect((await f.app.fetch(post("/v1/completions", cmpl({ max_tokens: 2 })))).status).toBe(200);
  });
});

describe("decision log", () => {
  test("each decision is logged at debug: worker, rank, cost, overlaps, index size", async () => {
    const lines: string[] = [];
    const stream = { write: (t: string) => (lines.push(t), true) } as unknown as NodeJS.WritableStream;
    const state = routingState("kv");
    state.putWorker(workerRecord("a", { data_parallel_size: 2 }));
    const a = app(state, ndjsonWorker(), { logger: createLogger({ level: "debug", stream, format: "json" }) });
    expect((await a.fetch(post("/v1/completions", cmpl({ prompt: [1, 2, 3, 4, 5, 6, 7, 8, 9] })))).status).toBe(200);
    const line = lines.find((l) => l.includes("route m:"));
    // 9 tokens at block size 4: prefill 9 / 4 = 2.25 blocks, nothing active, 2 new full blocks.
    expect(line).toMatch(/worker a rank [01] cost 4\.250 = prefill 2\.250 \+ active 0 \+ new 2 block\(s\) \(isl 9, outstanding prefill 0 tokens; overlap device 0 host 0 disk 0\); index 0 device \/ 0 host block\(s\)/);
  });
});

describe("responses", () => {
  /** One completion of [1..5] from a worker that generates 42, 7 with 4 cached tokens. */
  function completeWithCachedTokens() {
    const worker = ndjsonWorker(undefined, (b) => [
      JSON.stringify({ token_id: 42 }),
      JSON.stringify({ token_id: 7 }),
      JSON.stringify({ finish_reason: "length", prompt_tokens: b.token_ids.length, cached_tokens: 4, host_loaded_tokens: 0, completion_tokens: 2 }),
    ]);
    const f = fleet(worker);
    return async () => (await (await f.app.fetch(post("/v1/completions", cmpl({ prompt: [1, 2, 3, 4, 5] })))).json()) as Record<string, any>;
  }

  test("generated ids render to the same text every time", async () => {
    const complete = completeWithCachedTokens();
    const a = await complete();
    const b = await complete();
    expect(a.choices[0].text).toBe(" bo na"); // ids 42 and 7 in the mock vocabulary's pseudo-words
    expect(b.choices[0].text).toBe(" bo na");
  });

  test("usage carries cached tokens", async () => {
    const a = await completeWithCachedTokens()();
    expect(a.usage).toEqual({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7, prompt_tokens_details: { cached_tokens: 4 } });
  });

  test("the same text tokenizes to the same worker prompt", async () => {
    const seen: number[][] = [];
    const f = fleet(ndjsonWorker((_u, b) => seen.push([...b.token_ids])));
    await f.app.fetch(post("/v1/chat/completions", chat()));
    await f.app.fetch(post("/v1/chat/completions", chat()));
    // The chat template around "hi": "<", "|", "im", "_", "start", "|", ">", "user", "\nhi", "<", … "assistant", "\n".
    const im = [32539, 32219, 42827, 26030];
    const ids = [...im, 18111, 32219, 37777, 1362, 31954, ...im, 21130, 32219, 37777, 44131, 32219, 42827, 26030, 18111, 32219, 37777, 15287, 22541];
    expect(seen).toEqual([ids, ids]);
  });
});
