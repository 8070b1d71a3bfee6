// HTTP faults: the plan for one request, the delaying and cutting sinks, and the fault API and
// http_error through the mocker's app (app.fetch, no port).
import { describe, expect, test } from "bun:test";
import { waitFor } from "../../../../test/harness.ts";
import { createLogger } from "../../../lib/logger.ts";
import { checkFault } from "../../../protocol/faults.ts";
import type { GenerateRequest, GenerateSummary } from "../../../protocol/generate.ts";
import { createMockerFetch, type WorkerPool } from "../http-app.ts";
import type { SubmitOutcome } from "../generation.ts";
import type { TokenSink } from "../token-stream.ts";
import { createAdminFetch } from "./admin-app.ts";
import { FaultTable } from "./fault-table.ts";
import { cuttingSink, delayedSink, planRequest, sampleMs } from "./http-faults.ts";

const logger = createLogger({ level: "silent" });
const SUMMARY: GenerateSummary = { finish_reason: "length", prompt_tokens: 1, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: 3 };

function tableWith(...bodies: object[]): FaultTable {
  const t = new FaultTable(["w-0", "w-1"], 1, logger);
  for (const b of bodies) {
    const c = checkFault(b);
    if (!c.ok) throw new Error(c.problem);
    const r = t.add(c.value);
    if (!r.ok) throw new Error(r.problem);
  }
  return t;
}

class RecordingSink implements TokenSink {
  readonly got: (number | "end")[] = [];
  tokens(ids: readonly number[]): void {
    this.got.push(...ids);
  }
  finish(): void {
    this.got.push("end");
  }
}

describe("request plan", () => {
  test("http_error at rate 1 hits every request of its target, and only those; count runs out", () => {
    const t = tableWith({ kind: "http_error", target: { worker: 1 }, count: 2, status: 429 });
    expect(planRequest(t, 0, 0)).toBeUndefined();
    expect(planRequest(t, 1, 0)).toEqual({ error: { status: 429, faultId: "f-1" } });
    expect(planRequest(t, 1, 0)?.error?.status).toBe(429);
    expect(planRequest(t, 1, 0)).toBeUndefined();
  });

  test("rate 0 never hits; hang, cut and latency plan their parts", () => {
    expect(planRequest(tableWith({ kind: "http_error", rate: 0 }), 0, 0)).toBeUndefined();
    expect(planRequest(tableWith({ kind: "hang" }), 0, 0)).toEqual({ hang: true });
    const p = planRequest(tableWith({ kind: "cut_stream", after_tokens: 4 }, { kind: "latency", ttft_ms: 7, per_token_ms: 2 }), 0, 0)!;
    expect([p.cutAfterTokens, p.latency?.ttftMs, p.latency?.perTokenMs()]).toEqual([4, 7, 2]);
  });

  test("distributions sample within their range", () => {
    const rand = [0, 0.5, 0.999];
    expect(rand.map((x) => Math.round(sampleMs({ dist: "uniform", min: 10, max: 20 }, () => x) * 100) / 100)).toEqual([10, 15, 19.99]);
    expect(sampleMs({ dist: "exponential", mean: 5 }, () => 0)).toBe(0);
    expect(sampleMs({ dist: "exponential", mean: 5 }, () => 0.5)).toBeCloseTo(5 * Math.LN2, 9);
  });
});

describe("sinks", () => {
  test("cuttingSink passes k tokens, then cuts once instead of the next; a request done within k ends normally", () => {
    const inner = new RecordingSink();
    let cuts = 0;
    const s = cuttingSink(inner, 2, () => cuts++);
    s.tokens([1]);
    s.tokens([2]);
    expect(cuts).toBe(0);
    s.tokens([3, 4]);
    s.tokens([5]);
    s.finish(SUMMARY);
    expect([inner.got, cuts]).toEqual([[1, 2], 1]);

    const whole = new RecordingSink();
    const t = cuttingSink(whole, 2, () => cuts++);
    t.tokens([1, 2]);
    t.finish(SUMMARY);
    expect([whole.got, cuts]).toEqual([[1, 2, "end"], 1]);

    const none = new RecordingSink();
    cuttingSink(none, 0, () => cuts++).tokens([9]);
    expect([none.got, cuts]).toEqual([[], 2]);
  });

  test("delayedSink keeps the order and puts the summary after the last token", async () => {
    const inner = new RecordingSink();
    const s = delayedSink(inner, 5, () => 1);
    s.tokens([1, 2]);
    s.tokens([3]);
    s.finish(SUMMARY);
    expect(inner.got).toEqual([]);
    await waitFor(() => inner.got.length === 4, { what: "delayed output" });
    expect(inner.got).toEqual([1, 2, 3, "end"]);
  });
});

/** A pool that answers every request with three tokens at once. */
class InstantPool implements WorkerPool {
  healthy = () => true;
  submitted = 0;
  submit(_req: GenerateRequest, sink: TokenSink): SubmitOutcome {
    this.submitted++;
    sink.tokens([1, 2, 3]);
    sink.finish(SUMMARY);
    return { ok: true, requestId: `r-${this.submitted}` };
  }
  cancel(): void {}
  metrics = () => [];
  workerId = (w: number) => `w-${w}`;
}

const LIMITS = { maxPromptTokens: 100, maxOutputTokens: 100 };
const gen = (worker = 0) => new Request("http://m/v1/generate", { method: "POST", body: JSON.stringify({ worker, token_ids: [1, 2], max_tokens: 3 }) });
const admin = (method: string, path = "/admin/faults", body?: unknown) => new Request(`http://m${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });

describe("fault API and http_error through the app", () => {
  test("without --admin every /admin path is a 404; /v1/generate names the worker and rank in headers", async () => {
    const app = createMockerFetch(new InstantPool(), LIMITS);
    expect((await app(admin("GET"))).status).toBe(404);
    const res = await app(gen(1));
    expect([res.status, res.headers.get("x-kvcr-worker"), res.headers.get("x-kvcr-dp-rank")]).toEqual([200, "w-1", "0"]);
  });

  test("POST validates (400 naming the field), 201 gives the fault with its id; GET lists; DELETE ends one or all", async () => {
    const t = new FaultTable(["w-0", "w-1"], 1, logger);
    const app = createMockerFetch(new InstantPool(), LIMITS, { admin: createAdminFetch(t), faults: { plan: (w, r) => planRequest(t, w, r), closing: new AbortController().signal } });
    const bad = await app(admin("POST", "/admin/faults", { kind: "http_error", rate: 3 }));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { param: string; message: string } }).error).toMatchObject({ param: "rate", message: expect.stringMatching(/^rate:/) });
    expect((await app(admin("POST", "/admin/faults", { kind: "hang", target: { worker: 5 } }))).status).toBe(400);
    expect((await app(new Request("http://m/admin/faults", { method: "POST", body: "{" }))).status).toBe(400);

    const created = await app(admin("POST", "/admin/faults", { kind: "http_error", status: 503, target: { worker: "w-1" } }));
    expect(created.status).toBe(201);
    const fault = (await created.json()) as { id: string; kind: string; started_at_ms: number };
    expect(fault).toMatchObject({ id: "f-1", kind: "http_error", rate: 1, status: 503, target: { worker: "w-1" } });
    expect(typeof fault.started_at_ms).toBe("number");
    await app(admin("POST", "/admin/faults", { kind: "latency", ttft_ms: 1 }));
    expect(((await (await app(admin("GET"))).json()) as { faults: { id: string }[] }).faults.map((f) => f.id)).toEqual(["f-1", "f-2"]);

    // http_error at rate 1: OpenAI's error body, the worker named, only the target hit.
    const failed = await app(gen(1));
    expect([failed.status, failed.headers.get("x-kvcr-worker")]).toEqual([503, "w-1"]);
    expect(((await failed.json()) as { error: object }).error).toMatchObject({ type: "service_unavailable", code: "injected_fault", param: null, message: expect.any(String) });
    expect((await app(gen(0))).status).toBe(200);

    expect((await app(admin("DELETE", "/admin/faults/f-1"))).status).toBe(200);
    expect((await app(admin("DELETE", "/admin/faults/f-1"))).status).toBe(404);
    expect((await app(gen(1))).status).toBe(200);
    expect(await (await app(admin("DELETE"))).json()).toEqual({ deleted: 1 });
    expect((await app(admin("PUT"))).status).toBe(405);
    expect((await app(admin("GET", "/admin/other"))).status).toBe(404);
    t.close();
  });

  test("a kind this process cannot apply is a 501 naming it", async () => {
    const t = new FaultTable(["w-0"], 1, logger);
    const app = createMockerFetch(new InstantPool(), LIMITS, { admin: createAdminFetch(t, (k) => (k === "lease_stop" ? "no lease control" : undefined)) });
    const res = await app(admin("POST", "/admin/faults", { kind: "lease_stop", for: 1 }));
    expect([res.status, ((await res.json()) as { error: { param: string } }).error.param]).toEqual([501, "kind"]);
    expect(t.list()).toEqual([]);
  });

  test("hang answers nothing until the process closes", async () => {
    const t = tableWith({ kind: "hang", count: 1 });
    const closing = new AbortController();
    const app = createMockerFetch(new InstantPool(), LIMITS, { faults: { plan: (w, r) => planRequest(t, w, r), closing: closing.signal } });
    let answered = false;
    const hung = app(gen()).then((r) => ((answered = true), r));
    expect((await app(gen())).status).toBe(200); // count 1: only the first hangs
    expect(answered).toBe(false);
    closing.abort();
    expect((await hung).status).toBe(503);
  });
});
