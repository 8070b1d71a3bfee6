// The prefill router without a port: fake prefill and decode workers keyed by URL. Off without
// prefill workers; with them, the prefill leg (max_tokens 1, do_remote_decode) on a prefill worker
// picked by overlap, the decode leg with the reply's kv_transfer_params on a decode worker picked
// by load; failed prefill workers → the next one, then aggregated (also when all are busy); the
// decode leg's retry (same params) and migration (none); conditional disaggregation's bypass
// (marked, counted) and its refusal of a cold prompt; the client's own 400 passed on.
import { describe, expect, test } from "bun:test";
import { waitFor } from "../../../../test/harness.ts";
import { app as frontendApp, post, routingState, workerRecord } from "../../../../test/routing/fake-fleet.ts";
import type { IslBounding } from "../../../core/routing/conditional-disagg.ts";
import type { RouterOptions } from "../../../core/routing/router-options.ts";
import { createBlockHasher } from "../../../lib/xxh3.ts";
import type { RunPolicy } from "../request-run.ts";
import type { RoutingState } from "../routing-state.ts";
import { type FetchLike, type GenerateBody } from "../worker-call.ts";

type Behaviour = (body: GenerateBody) => Response;

const summary = (b: GenerateBody, extra: Record<string, unknown> = {}) => JSON.stringify({ finish_reason: "length", prompt_tokens: b.token_ids.length, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: b.max_tokens, ...extra });
const tokens = (b: GenerateBody) => Array.from({ length: b.max_tokens }, (_, i) => JSON.stringify({ token_id: 500 + i }));

/** A prefill worker: one token, then NixlConnector's params naming one block id per full prompt block. */
const prefills =
  (name: string): Behaviour =>
  (b) => {
    const params = { do_remote_prefill: true, do_remote_decode: false, remote_engine_id: `${name}_dp0`, remote_request_id: b.request_id, remote_block_ids: Array.from({ length: Math.floor(b.token_ids.length / 4) }, (_, i) => i), remote_host: "127.0.0.1", remote_port: 7000, tp_size: 1 };
    return new Response([...tokens(b), summary(b, { kv_transfer_params: params })].join("\n") + "\n");
  };
const decodes: Behaviour = (b) => new Response([...tokens(b), summary(b)].join("\n") + "\n");
const refuses: Behaviour = () => {
  throw Object.assign(new Error("Unable to connect"), { code: "ConnectionRefused" });
};
const badRequest: Behaviour = () => Response.json({ error: { message: "prompt too long for the KV cache" } }, { status: 400 });

interface Call {
  worker: string;
  body: GenerateBody;
  headers: Record<string, string>;
}

function fleet(prefill: Record<string, Behaviour>, decode: Record<string, Behaviour>, islBounding?: IslBounding, router: Omit<RouterOptions, "mode"> = {}, failures?: Partial<RunPolicy>, adapters: Record<string, string[]> = {}) {
  const state: RoutingState = routingState("kv", { router });
  const lora = (id: string) => (adapters[id] === undefined ? {} : { lora_adapters: adapters[id] });
  for (const id of Object.keys(prefill)) state.putWorker(workerRecord(id, { disaggregation_mode: "prefill", ...lora(id) }));
  for (const id of Object.keys(decode)) state.putWorker(workerRecord(id, { disaggregation_mode: "decode", ...lora(id) }));
  const behaviours = { ...prefill, ...decode };
  const calls: Call[] = [];
  const fake: FetchLike = async (url, init) => {
    const worker = new URL(url).pathname.split("/")[1]!;
    const body = JSON.parse(String(init.body)) as GenerateBody;
    calls.push({ worker, body, headers: { ...(init.headers as Record<string, string>) } });
    return behaviours[worker]!(body);
  };
  const app = frontendApp(state, fake, { maxRequestBytes: 1 << 20, islBounding, failures });
  const metric = async (name: string) => {
    const text = await (await app.fetch(new Request("http://frontend/metrics"))).text();
    return text.split("\n").filter((l) => l.startsWith(name)).join("\n");
  };
  return { state, app, calls, metric };
}

const PROMPT = Array.from({ length: 32 }, (_, i) => 10 + i);
const cmpl = (prompt = PROMPT) => ({ model: "m", prompt, max_tokens: 4 });
const storeOn = (state: RoutingState, worker: string, prompt: number[], blocks: number) => {
  const seq = Array.from(createBlockHasher().sequenceHashes(prompt, 4)).slice(0, blocks);
  state.index.apply(state.rankIdOf(worker, 0), { kind: "stored", tier: "device", blockHashes: seq });
};

describe("prefill router", () => {
  test("off without prefill workers: the decode worker gets the whole request, no transfer params", async () => {
    const f = fleet({}, { d1: decodes });
    const res = await f.app.fetch(post("/v1/completions", cmpl()));
    expect(res.status).toBe(200);
    expect(f.calls.map((c) => c.worker)).toEqual(["d1"]);
    expect(f.calls[0]!.body.kv_transfer_params).toBeUndefined();
  });

  test("prefill leg on a prefill worker (max_tokens 1, do_remote_decode), decode leg with the reply's params; the client sees the decode leg's tokens", async () => {
    const f = fleet({ p1: prefills("p1") }, { d1: decodes });
    const res = await f.app.fetch(post("/v1/completions", cmpl()));
    expect(res.status).toBe(200);
    expect(res.headers.get("x-kvcr-worker")).toBe("d1");
    const body = (await res.json()) as { usage: { completion_tokens: number } };
    expect(body.usage.completion_tokens).toBe(4);
    const [p, d] = f.calls;
    expect([p!.worker, d!.worker]).toEqual(["p1", "d1"]);
    expect(p!.body).toMatchObject({ max_tokens: 1, token_ids: PROMPT, kv_transfer_params: { do_remote_decode: true } });
    expect(d!.body.max_tokens).toBe(4);
    expect(d!.body.kv_transfer_params).toMatchObject({ do_remote_prefill: true, remote_engine_id: "p1_dp0", remote_request_id: p!.body.request_id, remote_block_ids: [0, 1, 2, 3, 4, 5, 6, 7] });
    expect(await f.metric("kvcr_frontend_disagg_legs_total")).toBe('kvcr_frontend_disagg_legs_total{leg="prefill"} 1\nkvcr_frontend_disagg_legs_total{leg="decode"} 1');
    expect(await f.metric("kvcr_frontend_kv_transfer_estimated_blocks_total")).toContain('{timing="full_prompt"} 8');
    // The prefill pool's load is released: nothing is left counted on either pool.
    expect(f.state.routerOf("m", "prefill")!.activePrefillTokensOf(f.state.rankIdOf("p1", 0))).toBe(0);
    expect(f.state.routerOf("m")!.activeBlocksOf(f.state.rankIdOf("d1", 0))).toBe(0);
  });

  test("the prefill pool follows overlap; the decode leg ignores it (load only) and its transfer estimate counts what the decode worker lacks", async () => {
    const f = fleet({ p1: prefills("p1"), p2: prefills("p2") }, { d1: decodes, d2: decodes });
    storeOn(f.state, "p2", PROMPT, 6);
    storeOn(f.state, "d1", PROMPT, 8);
    const decodeWorkers: string[] = [];
    for (let i = 0; i < 12; i++) {
      f.calls.length = 0;
      expect((await f.app.fetch(post("/v1/completions", cmpl()))).status).toBe(200);
      expect(f.calls[0]!.worker).toBe("p2");
      decodeWorkers.push(f.calls[1]!.worker);
    }
    // With the overlap credit every request would go to d1; on load alone the ties split.
    expect(new Set(decodeWorkers)).toEqual(new Set(["d1", "d2"]));
    // d1 holds all 8 blocks, d2 none: each leg sent to d2 lacks the whole prompt, each to d1 nothing.
    const missing = Number((await f.metric('kvcr_frontend_kv_transfer_estimated_blocks_total{timing="destination_missing"}')).split(" ")[1]);
    expect(missing).toBe(8 * decodeWorkers.filter((w) => w === "d2").length);
  });

  test("a failed prefill worker: the next one; none answering: the request runs aggregated on a decode worker (counted)", async () => {
    const f = fleet({ p1: refuses, p2: prefills("p2") }, { d1: decodes });
    expect((await f.app.fetch(post("/v1/completions", cmpl()))).status).toBe(200);
    const workers = f.calls.map((c) => c.worker);
    expect(workers.at(-1)).toBe("d1");
    expect(f.calls.at(-1)!.body.kv_transfer_params).toMatchObject({ remote_engine_id: "p2_dp0" });

    const g = fleet({ p1: refuses, p2: refuses }, { d1: decodes });
    const res = await g.app.fetch(post("/v1/completions", cmpl()));
    expect(res.status).toBe(200);
    expect(g.calls.map((c) => c.worker).at(-1)).toBe("d1");
    expect(new Set(g.calls.slice(0, 2).map((c) => c.worker))).toEqual(new Set(["p1", "p2"]));
    expect(g.calls[2]!.body.kv_transfer_params).toBeUndefined();
    expect(await g.metric('kvcr_frontend_disagg_aggregated_total{reason="prefill_failed"}')).toBe('kvcr_frontend_disagg_aggregated_total{reason="prefill_failed"} 1');
    // Both prefill workers left routing at once (connection refused): the next request is aggregated without trying them.
    g.calls.length = 0;
    expect((await g.app.fetch(post("/v1/completions", cmpl()))).status).toBe(200);
    expect(g.calls.map((c) => c.worker)).toEqual(["d1"]);
  });

  test("every prefill worker over its busy thresholds: the request runs aggregated (counted as prefill_busy)", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const ENC = new TextEncoder();
    // The first prefill leg is answered only at the end: its prompt stays outstanding on p1.
    const slow: Behaviour = (b) => {
      const answer = prefills("p1")(b).text();
      return new Response(new ReadableStream({ start: (c) => void Promise.all([held, answer]).then(([, text]) => (c.enqueue(ENC.encode(text)), c.close())) }));
    };
    const f = fleet({ p1: slow }, { d1: decodes }, undefined, { busy: { activePrefillTokens: 0 } });
    const first = f.app.fetch(post("/v1/completions", cmpl()));
    await waitFor(() => f.calls.length === 1, { what: "the first prefill leg sent" });
    const second = await f.app.fetch(post("/v1/completions", cmpl(PROMPT.map((t) => t + 7))));
    expect(second.status).toBe(200);
    expect(f.calls.at(-1)).toMatchObject({ worker: "d1" });
    expect(f.calls.at(-1)!.body.kv_transfer_params).toBeUndefined();
    expect(await f.metric('kvcr_frontend_disagg_aggregated_total{reason="prefill_busy"}')).toBe('kvcr_frontend_disagg_aggregated_total{reason="prefill_busy"} 1');
    release();
    expect((await first).status).toBe(200);
  });

  test("the decode leg's retry takes the same transfer params to the other decode worker; a migration after tokens carries none", async () => {
    let refused = 0;
    const refusesOnce: Behaviour = (b) => (refused++ === 0 ? refuses(b) : decodes(b));
    const f = fleet({ p1: prefills("p1") }, { d1: refusesOnce, d2: refusesOnce });
    expect((await f.app.fetch(post("/v1/completions", cmpl()))).status).toBe(200);
    const [p, first, retry] = f.calls;
    expect(p!.worker).toBe("p1");
    expect(retry!.worker).not.toBe(first!.worker);
    expect(retry!.body.kv_transfer_params).toEqual(first!.body.kv_transfer_params!);
    expect(retry!.body.kv_transfer_params).toMatchObject({ remote_engine_id: "p1_dp0" });

    const ENC = new TextEncoder();
    let cut = 0;
    // The first decode attempt sends 2 tokens, then its connection breaks.
    const cutsOnce: Behaviour = (b) =>
      cut++ > 0
        ? decodes(b)
        : new Response(new ReadableStream({ start: (c) => (c.enqueue(ENC.encode(`${tokens(b).slice(0, 2).join("\n")}\n`)), void setTimeout(() => c.error(new Error("socket closed")), 1)) }));
    const g = fleet({ p1: prefills("p1") }, { d1: cutsOnce, d2: cutsOnce }, undefined, {}, { migrationLimit: 1 });
    const res = await g.app.fetch(post("/v1/completions", cmpl()));
    expect(res.status).toBe(200);
    expect(((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(4);
    const migrated = g.calls.at(-1)!;
    expect(migrated.body.token_ids.length).toBe(PROMPT.length + 2);
    expect(migrated.body.kv_transfer_params).toBeUndefined();
  });

  test("the prefill worker's 400 is the client's answer", async () => {
    const f = fleet({ p1: badRequest }, { d1: decodes });
    const res = await f.app.fetch(post("/v1/completions", cmpl()));
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain("prompt too long");
    expect(f.calls.map((c) => c.worker)).toEqual(["p1"]);
    expect(f.state.routerOf("m")!.activeBlocksOf(f.state.rankIdOf("d1", 0))).toBe(0);
  });
});

describe("conditional disaggregation (isl_bounding)", () => {
  const policy: IslBounding = { effIslThreshold: 2048, effIslRatioThreshold: 0.7 };

  test("a prompt mostly cached on its decode worker is prefilled there: no prefill leg, marked and counted, credit kept", async () => {
    const f = fleet({ p1: prefills("p1") }, { d1: decodes, d2: decodes }, policy);
    storeOn(f.state, "d2", PROMPT, 7); // eff 4 tokens of 32: 0.125 < 0.7
    const res = await f.app.fetch(post("/v1/completions", cmpl()));
    expect(res.status).toBe(200);
    expect(f.calls.map((c) => c.worker)).toEqual(["d2"]);
    expect(f.calls[0]!.headers["x-bypass-remote-prefill"]).toBe("true");
    expect(f.calls[0]!.body.kv_transfer_params).toBeUndefined();
    expect(await f.metric("kvcr_frontend_conditional_disagg_bypasses_total")).toBe("kvcr_frontend_conditional_disagg_bypasses_total 1");
  });

  test("a cold prompt takes the prefill leg, then the decode worker picked first", async () => {
    const f = fleet({ p1: prefills("p1") }, { d1: decodes }, policy);
    const res = await f.app.fetch(post("/v1/completions", cmpl(PROMPT.map((t) => t + 100))));
    expect(res.status).toBe(200);
    expect(f.calls.map((c) => c.worker)).toEqual(["p1", "d1"]);
    expect(f.calls[1]!.headers["x-bypass-remote-prefill"]).toBeUndefined();
    expect(f.calls[1]!.body.kv_transfer_params).toMatchObject({ remote_engine_id: "p1_dp0" });
    expect(await f.metric("kvcr_frontend_conditional_disagg_bypasses_total")).toBe("kvcr_frontend_conditional_disagg_bypasses_total 0");
  });
});

describe("LoRA adapters on prefill and decode workers", () => {
  const adapterBody = () => ({ ...cmpl(), model: "sql-lora" });
  const storeAdapterOn = (state: RoutingState, worker: string, blocks: number) => {
    const h = createBlockHasher();
    const seq = Array.from(h.sequenceHashes(PROMPT, 4, undefined, h.seedOf("sql-lora"))).slice(0, blocks);
    state.index.apply(state.rankIdOf(worker, 0), { kind: "stored", tier: "device", blockHashes: seq });
  };

  test("both legs go to holders of the adapter and carry lora_name; the prefill pool is priced on the adapter's hashes", async () => {
    const holders = { p2: ["sql-lora"], p3: ["sql-lora"], d2: ["sql-lora"] };
    const f = fleet({ p1: prefills("p1"), p2: prefills("p2"), p3: prefills("p3") }, { d1: decodes, d2: decodes }, undefined, {}, undefined, holders);
    storeOn(f.state, "p1", PROMPT, 8); // the base model's blocks of the same prompt: no credit for the adapter
    storeAdapterOn(f.state, "p3", 6);
    for (let i = 0; i < 4; i++) {
      f.calls.length = 0;
      const res = await f.app.fetch(post("/v1/completions", adapterBody()));
      expect(res.status).toBe(200);
      const [p, d] = f.calls;
      expect([p!.worker, d!.worker]).toEqual(["p3", "d2"]);
      expect(p!.body).toMatchObject({ lora_name: "sql-lora", max_tokens: 1, kv_transfer_params: { do_remote_decode: true } });
      expect(d!.body).toMatchObject({ lora_name: "sql-lora", kv_transfer_params: { remote_engine_id: "p3_dp0" } });
    }
    expect(await f.metric("kvcr_frontend_disagg_legs_total")).toBe('kvcr_frontend_disagg_legs_total{leg="prefill"} 4\nkvcr_frontend_disagg_legs_total{leg="decode"} 4');
  });

  test("no prefill worker holds the adapter: it runs aggregated on a decode worker holding it, counted by its reason", async () => {
    const f = fleet({ p1: prefills("p1") }, { d1: decodes, d2: decodes }, undefined, {}, undefined, { d1: ["sql-lora"] });
    const res = await f.app.fetch(post("/v1/completions", adapterBody()));
    expect(res.status).toBe(200);
    expect(f.calls.map((c) => c.worker)).toEqual(["d1"]);
    expect(f.calls[0]!.body.lora_name).toBe("sql-lora");
    expect(f.calls[0]!.body.kv_transfer_params).toBeUndefined();
    expect(await f.metric("kvcr_frontend_disagg_aggregated_total")).toContain('{reason="adapter_not_on_prefill"} 1');
  });

  test("an adapter only prefill workers hold serves no request: not listed, a 404 in vLLM's words, nothing sent", async () => {
    const f = fleet({ p1: prefills("p1"), p2: prefills("p2") }, { d1: decodes }, undefined, {}, undefined, { p2: ["sql-lora"] });
    expect(f.state.models()).toEqual(["m"]);
    const res = await f.app.fetch(post("/v1/completions", adapterBody()));
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toStartWith("The model `sql-lora` does not exist.");
    expect(f.calls).toEqual([]);
  });
});
