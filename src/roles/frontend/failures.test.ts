// Failure handling without a port: retries after a worker that never got the request, ejection
// and the /health probe on a fake clock, migration of a cut stream (no gap, no duplicate, usage
// of the whole request), and the context-length 400. Workers are fake fetches keyed by URL.
import { describe, expect, test } from "bun:test";
import { waitFor } from "../../../test/harness.ts";
import { app as frontendApp, post, routingState, workerRecord } from "../../../test/routing/fake-fleet.ts";
import { detokenizeOne } from "../../core/text/tokenizer.ts";
import type { WorkerRecord } from "../../protocol/records.ts";
import type { RunPolicy } from "./request-run.ts";
import type { FrontendApp } from "./http-app.ts";
import type { RoutingState } from "./routing-state.ts";
import { type FetchLike, type GenerateBody } from "./worker-call.ts";

const ENC = new TextEncoder();

/** Token at sequence position p is p: a continued sequence has no gap and no duplicate by construction. */
const tokenLines = (body: GenerateBody, count = body.max_tokens) => Array.from({ length: count }, (_, i) => JSON.stringify({ token_id: body.token_ids.length + i }));
const summaryLine = (body: GenerateBody, cached = 0) =>
  JSON.stringify({ finish_reason: "length", prompt_tokens: body.token_ids.length, cached_tokens: cached, host_loaded_tokens: 0, completion_tokens: body.max_tokens });

type Behaviour = (body: GenerateBody, signal: AbortSignal) => Promise<Response> | Response;

/** A whole answer in one body. */
const serves: Behaviour = (b) => new Response([...tokenLines(b), summaryLine(b)].join("\n") + "\n");
/** Connection refused: nothing reached the worker. */
const refuses: Behaviour = () => {
  throw Object.assign(new Error("Unable to connect. Is the computer able to access the url?"), { code: "ConnectionRefused" });
};
/** `k` tokens, then the connection breaks (a killed worker). */
const cutsAfter =
  (k: number): Behaviour =>
  (b) =>
    new Response(
      new ReadableStream({
        start(c) {
          c.enqueue(ENC.encode(tokenLines(b, k).join("\n") + "\n"));
          setTimeout(() => c.error(new Error("socket connection was closed unexpectedly")), 1);
        },
      }),
    );
/** `k` tokens, then a summary with the worker's own cancel (it is shutting down). */
const cancelsAfter =
  (k: number): Behaviour =>
  (b) =>
    new Response([...tokenLines(b, k), JSON.stringify({ finish_reason: "cancelled", prompt_tokens: b.token_ids.length, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: k })].join("\n") + "\n");

interface Fleet {
  state: RoutingState;
  app: FrontendApp;
  calls: { worker: string; body: GenerateBody }[];
  metrics: () => Promise<string>;
  clock: { now: number };
  probes: string[];
}

function fleet(workers: Record<string, Behaviour>, opts: { failures?: Partial<RunPolicy>; healthy?: (url: string) => boolean; records?: Partial<WorkerRecord>; ejectAfter?: number } = {}): Fleet {
  const clock = { now: 0 };
  const state = routingState("round-robin", { now: () => clock.now });
  for (const id of Object.keys(workers)) state.putWorker(workerRecord(id, opts.records));
  const calls: Fleet["calls"] = [];
  const probes: string[] = [];
  const fake: FetchLike = async (url, init) => {
    const worker = new URL(url).pathname.split("/")[1]!;
    const body = JSON.parse(String(init.body)) as GenerateBody;
    calls.push({ worker, body });
    return workers[worker]!(body, init.signal!);
  };
  const app = frontendApp(state, fake, {
    maxRequestBytes: 1 << 20,
    now: () => clock.now,
    failures: opts.failures,
    probeWorker: async (url) => {
      probes.push(url);
      return opts.healthy?.(url) ?? true;
    },
  });
  const metrics = async () => (await app.fetch(new Request("http://frontend/metrics"))).text();
  return { state, app, calls, metrics, clock, probes };
}

const cmpl = (over: Record<string, unknown> = {}) => ({ model: "m", prompt: [1, 2, 3, 4, 5], max_tokens: 8, ...over });
const chat = (over: Record<string, unknown> = {}) => ({ model: "m", messages: [{ role: "user", content: "hello there" }], max_tokens: 8, ...over });

/** The text of tokens at positions [from, from + n). */
const textOf = (from: number, n: number) => Array.from({ length: n }, (_, i) => detokenizeOne(from + i)).join("");

/** An SSE body's data payloads (JSON parsed), and whether it ended with [DONE]. */
function sse(text: string): { events: Record<string, any>[]; done: boolean } {
  const data = text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice(6));
  return { events: data.filter((d) => d !== "[DONE]").map((d) => JSON.parse(d)), done: data.at(-1) === "[DONE]" };
}

describe("retry: a request that never reached its worker goes to the next-best one", () => {
  test("connection refused → the next worker answers, and the refusing worker leaves routing at once", async () => {
    const f = fleet({ a: refuses, b: serves });
    const res = await f.app.fetch(post("/v1/completions", cmpl()));
    expect(res.status).toBe(200);
    expect(res.headers.get("x-kvcr-worker")).toBe("b");
    expect(((await res.json()) as any).choices[0].text).toBe(textOf(5, 8));
    expect(f.calls.map((c) => c.worker)).toEqual(["a", "b"]);
    expect(f.calls[1]!.body.token_ids).toEqual([1, 2, 3, 4, 5]); // the same request, not a continuation
    expect(f.state.health.isEjected("a")).toBe(true);
    const text = await f.metrics();
    expect(text).toContain("kvcr_frontend_retries_total 1");
    expect(text).toContain('kvcr_frontend_worker_ejections_total{reason="down"} 1');
    expect(text).toContain("kvcr_frontend_ejected_workers 1");
    // Later requests never try the ejected worker.
    for (let i = 0; i < 4; i++) expect((await f.app.fetch(post("/v1/completions", cmpl()))).headers.get("x-kvcr-worker")).toBe("b");
    expect(f.calls.filter((c) => c.worker === "a")).toHaveLength(1);
  });

  test("a worker answering 503 → the next worker; the 503s count toward --worker-eject-after, not at once", async () => {
    const f = fleet({ a: () => Response.json({ error: { message: "busy" } }, { status: 503 }), b: serves });
    const res = await f.app.fetch(post("/v1/chat/completions", chat()));
    expect(res.status).toBe(200);
    expect(f.calls.map((c) => c.worker)).toEqual(["a", "b"]);
    expect(await f.metrics()).toContain("kvcr_frontend_retries_total 1");
    expect(f.state.health.isEjected("a")).toBe(false);
    for (let i = 0; i < 4; i++) await f.app.fetch(post("/v1/chat/completions", chat()));
    expect(f.state.health.isEjected("a")).toBe(true); // the third 503 in a row
    expect(await f.metrics()).toContain('kvcr_frontend_worker_ejections_total{reason="failures"} 1');
  });

  test("a retry with no other worker left is not counted", async () => {
    const f = fleet({ a: refuses });
    expect((await f.app.fetch(post("/v1/completions", cmpl()))).status).toBe(502);
    expect(await f.metrics()).toContain("kvcr_frontend_retries_total 0");
  });

  test("at most --router-retries times, then the last worker's error", async () => {
    const f = fleet({ a: refuses, b: refuses, c: refuses }, { failures: { retries: 1 } });
    const res = await f.app.fetch(post("/v1/completions", cmpl()));
    expect(res.status).toBe(502);
    expect(f.calls).toHaveLength(2);
  });

  test("nothing is sent again once the request was written: a broken connection, a 500, a cut stream", async () => {
    const broken: Behaviour = () => {
      throw new Error("the connection closed before any answer; the request may have reached it");
    };
    for (const behaviour of [broken, () => Response.json({ error: "boom" }, { status: 500 }), cutsAfter(3)]) {
      const f = fleet({ a: behaviour, b: serves });
      const res = await f.app.fetch(post("/v1/completions", cmpl({ stream: true })));
      if (res.status === 200) {
        const { events, done } = sse(await res.text());
        expect(done).toBe(false);
        expect(events.at(-1)!.error.code).toBe("worker_failed");
      } else expect(res.status).toBe(502);
      expect(f.calls.map((c) => c.worker)).toEqual(["a"]);
      expect(await f.metrics()).toContain("kvcr_frontend_retries_total 0");
    }
  });
});

describe("ejection: out of routing after failures in a row, back once /health answers", () => {
  test("three 500s in a row eject the worker; probes on the backoff bring it back", async () => {
    let healthy = false;
    const failsUntilHealthy: Behaviour = (b) => (healthy ? serves(b, new AbortController().signal) : Response.json({ error: "boom" }, { status: 500 }));
    const f = fleet({ a: failsUntilHealthy, b: serves }, { healthy: () => healthy });
    const seen: string[] = [];
    for (let i = 0; i < 8; i++) seen.push((await f.app.fetch(post("/v1/completions", cmpl()))).headers.get("x-kvcr-worker") ?? "a");
    // Round-robin: a fails at requests 1, 3, 5 and is out after the third; the rest go to b.
    expect(seen).toEqual(["a", "b", "a", "b", "a", "b", "b", "b"]);
    expect(await f.metrics()).toContain('kvcr_frontend_worker_ejections_total{reason="failures"} 1');
    const probe = () => f.state.probeDue().map((w) => w.id);
    expect(probe()).toEqual([]); // the backoff (1 s) is not over
    f.clock.now = 1000;
    const due = f.state.probeDue();
    expect(due.map((w) => w.id)).toEqual(["a"]);
    f.state.probed("a", false); // /health did not answer: twice the wait
    f.clock.now = 2999;
    expect(probe()).toEqual([]);
    f.clock.now = 3000;
    expect(probe()).toEqual(["a"]);
    healthy = true;
    f.state.probed("a", true);
    expect(f.state.health.isEjected("a")).toBe(false);
    expect(await f.metrics()).toContain("kvcr_frontend_ejected_workers 0");
    // a is a candidate again: its ranks are in the router and round-robin hands it requests.
    const a = f.state.worker("a")!;
    expect(a.rankIds.every((s) => f.state.routerOf("m")!.has(s))).toBe(true);
    const callsBefore = f.calls.length;
    const back: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await f.app.fetch(post("/v1/completions", cmpl()));
      expect(res.status).toBe(200);
      back.push(res.headers.get("x-kvcr-worker")!);
    }
    expect(back.sort()).toEqual(["a", "a", "b", "b"]);
    expect(f.calls.slice(callsBefore).filter((c) => c.worker === "a")).toHaveLength(2);
  });

  test("the health probe asks the worker process's /health and brings it back on 200", async () => {
    const f = fleet({ a: refuses, b: serves });
    await f.app.fetch(post("/v1/completions", cmpl()));
    expect(f.state.health.isEjected("a")).toBe(true);
    f.clock.now = 1000;
    // The app's sweep runs every 250 ms of real time once something is ejected.
    await waitFor(() => !f.state.health.isEjected("a"), { what: "worker a probed back" });
    expect(f.probes).toEqual(["http://127.0.0.1:9/health"]);
    f.app.close?.();
  });

  test("a worker that left discovery is never routed, ejected or not; every worker ejected is a 503", async () => {
    const f = fleet({ a: refuses }, { failures: { retries: 0 } });
    expect((await f.app.fetch(post("/v1/completions", cmpl()))).status).toBe(502);
    const res = await f.app.fetch(post("/v1/completions", cmpl()));
    expect(res.status).toBe(503);
    expect(((await res.json()) as any).error.message).toContain("out of routing after failures");
    expect(((await (await f.app.fetch(new Request("http://frontend/v1/models"))).json()) as any).data.map((m: any) => m.id)).toEqual(["m"]);
    f.state.removeWorker("a");
    expect(f.state.health.ejectedCount).toBe(0);
    expect((await f.app.fetch(post("/v1/completions", cmpl()))).status).toBe(503);
  });
});

describe("migration: a failed worker's request resumes elsewhere as one uninterrupted answer", () => {
  for (const kind of ["completions", "chat"] as const) {
    const path = kind === "chat" ? "/v1/chat/completions" : "/v1/completions";
    const body = (over: Record<string, unknown>) => (kind === "chat" ? chat(over) : cmpl(over));

    test(`${kind}, streamed: a stream cut after 3 tokens continues on another worker with no gap or duplicate`, async () => {
      const f = fleet({ a: cutsAfter(3), b: serves }, { failures: { migrationLimit: 1 } });
      const res = await f.app.fetch(post(path, body({ stream: true, stream_options: { include_usage: true } })));
      expect(res.status).toBe(200);
      const { events, done } = sse(await res.text());
      expect(done).toBe(true);
      const prompt = f.calls[0]!.body.token_ids;
      // The second worker got prompt + the 3 tokens sent, and the 5 tokens still owed.
      expect(f.calls[1]!.worker).toBe("b");
      expect(f.calls[1]!.body.token_ids).toEqual([...prompt, prompt.length, prompt.length + 1, prompt.length + 2]);
      expect(f.calls[1]!.body.max_tokens).toBe(5);
      const pieces = events.filter((e) => e.choices?.length).map((e) => (kind === "chat" ? (e.choices[0].delta.content ?? "") : e.choices[0].text));
      expect(pieces.join("")).toBe(textOf(prompt.length, 8));
      expect(events.filter((e) => e.choices?.[0]?.delta?.role === "assistant")).toHaveLength(kind === "chat" ? 1 : 0);
      expect(events.at(-1)!.usage).toEqual({ prompt_tokens: prompt.length, completion_tokens: 8, total_tokens: prompt.length + 8, prompt_tokens_details: { cached_tokens: 0 } });
      expect(await f.metrics()).toContain('dynamo_frontend_model_migration_total{migration_type="ongoing_request",model="m"} 1');
      expect(f.state.health.isEjected("a")).toBe(true);
    });

    test(`${kind}, whole answer: the body holds every token once and usage counts the original prompt`, async () => {
      const f = fleet({ a: cutsAfter(3), b: serves }, { failures: { migrationLimit: 1 } });
      const res = await f.app.fetch(post(path, body({})));
      expect(res.status).toBe(200);
      const json = (await res.json()) as any;
      const prompt = f.calls[0]!.body.token_ids.length;
      expect(kind === "chat" ? json.choices[0].message.content : json.choices[0].text).toBe(textOf(prompt, 8));
      expect(json.usage).toMatchObject({ prompt_tokens: prompt, completion_tokens: 8 });
    });
  }

  test("without --migration-limit the client gets the error (SSE error event, 502 for a whole answer)", async () => {
    const f = fleet({ a: cutsAfter(3), b: serves });
    const { events, done } = sse(await (await f.app.fetch(post("/v1/completions", cmpl({ stream: true })))).text());
    expect(done).toBe(false);
    expect(events.filter((e) => e.choices)).toHaveLength(3);
    expect(events.at(-1)!.error.message).toContain("worker a");
    const g = fleet({ a: cutsAfter(3), b: serves });
    expect((await g.app.fetch(post("/v1/completions", cmpl()))).status).toBe(502);
    expect(g.calls).toHaveLength(1);
  });

  test("a worker shutting down (its own cancel) and one gone before answering migrate too", async () => {
    const f = fleet({ a: cancelsAfter(2), b: serves }, { failures: { migrationLimit: 1 } });
    const json = (await (await f.app.fetch(post("/v1/completions", cmpl()))).json()) as any;
    expect(json.choices[0].text).toBe(textOf(5, 8));
    const broken: Behaviour = () => {
      throw new Error("the connection closed before any answer");
    };
    const g = fleet({ a: broken, b: serves }, { failures: { migrationLimit: 1 } });
    expect((await g.app.fetch(post("/v1/completions", cmpl()))).status).toBe(200);
    expect(await g.metrics()).toContain('dynamo_frontend_model_migration_total{migration_type="new_request",model="m"} 1');
  });

  test("at most --migration-limit times", async () => {
    const f = fleet({ a: cutsAfter(2), b: cutsAfter(2), c: serves }, { failures: { migrationLimit: 1 } });
    const res = await f.app.fetch(post("/v1/completions", cmpl()));
    expect(res.status).toBe(502);
    expect(f.calls.map((c) => c.worker)).toEqual(["a", "b"]);
  });

  test("past --migration-max-seq-len the request is no longer tracked and cannot migrate", async () => {
    // Prompt 5 + 3 tokens = 8 > 7: tracking stops at the third token.
    const f = fleet({ a: cutsAfter(3), b: serves }, { failures: { migrationLimit: 1, migrationMaxSeqLen: 7 } });
    expect((await f.app.fetch(post("/v1/completions", cmpl()))).status).toBe(502);
    expect(f.calls).toHaveLength(1);
    expect(await f.metrics()).toContain('dynamo_frontend_model_migration_max_seq_len_exceeded_total{model="m"} 1');
    // Exactly at the limit still migrates.
    const g = fleet({ a: cutsAfter(3), b: serves }, { failures: { migrationLimit: 1, migrationMaxSeqLen: 8 } });
    expect((await g.app.fetch(post("/v1/completions", cmpl()))).status).toBe(200);
  });

  test("a stream cut after its last token but before its summary ends without another attempt", async () => {
    const f = fleet({ a: cutsAfter(8), b: serves }, { failures: { migrationLimit: 1 } });
    const json = (await (await f.app.fetch(post("/v1/completions", cmpl()))).json()) as any;
    expect(json.choices[0].text).toBe(textOf(5, 8));
    expect(f.calls).toHaveLength(1);
  });
});

describe("prompt longer than the model's context", () => {
  test("prompt + max_tokens over the workers' max_model_len is a 400 worded as vLLM's, before routing", async () => {
    const f = fleet({ a: serves }, { records: { max_model_len: 12 } });
    const res = await f.app.fetch(post("/v1/completions", cmpl({ max_tokens: 8 })));
    expect(res.status).toBe(400);
    const err = ((await res.json()) as any).error;
    expect(err.message).toBe(
      "This model's maximum context length is 12 tokens. However, you requested 13 tokens (5 in the messages, 8 in the completion). Please reduce the length of the messages or completion.",
    );
    expect([err.code, err.param]).toEqual(["context_length_exceeded", "prompt"]);
    expect(f.calls).toHaveLength(0);
    expect((await f.app.fetch(post("/v1/completions", cmpl({ max_tokens: 7 })))).status).toBe(200); // exactly 12 fits
  });

  test("records without max_model_len (older mockers) set no limit", async () => {
    const f = fleet({ a: serves });
    expect((await f.app.fetch(post("/v1/completions", cmpl({ max_tokens: 1000 })))).status).toBe(200);
  });
});
