// An OpenAI-style streaming server with fixed, known delays, for bench tests and scripts:
// POST /v1/completions (and /v1/chat/completions) stream one content chunk after `ttftMs`, then
// one every `itlMs` (or `chunksPerWrite` at a time), then a usage chunk and [DONE]. A plan chooses, per request, to behave or to
// fail: HTTP 500, a stream cut before [DONE], a connection reset mid-stream, a stall, an error chunk.
import type { Server } from "bun";

export type Behaviour = "ok" | "500" | "cut" | "reset" | "stall" | "error-chunk";

export interface FakeServerOptions {
  ttftMs?: number;
  itlMs?: number;
  /** Behaviour of the n-th request (0-based); default all ok. */
  plan?: (n: number, body: Record<string, unknown>) => Behaviour;
  /** Cached tokens reported for a prompt of `promptTokens`; default none reported. */
  cachedTokens?: (promptTokens: number, n: number) => number | undefined;
  /** Worker header value per request; undefined = no header. */
  worker?: (n: number) => string | undefined;
  models?: string[];
  /** Content chunks written together in one write (a burst the client reads at once); default 1. */
  chunksPerWrite?: number;
}

export interface FakeServer extends AsyncDisposable {
  readonly url: string;
  /** Request bodies received, in arrival order. */
  readonly bodies: Record<string, unknown>[];
  /** Per request: when it arrived, when each content chunk and [DONE] were written (performance.now). */
  readonly timings: Timing[];
  /** Each generation request's x-request-id header (null when absent), in arrival order. */
  readonly requestIds: (string | null)[];
}

export interface Timing {
  receivedMs: number;
  chunkMs: number[];
  /** Unset until [DONE] is written (never, for a request that fails). */
  doneMs?: number;
}

export function startFakeOpenAi(o: FakeServerOptions = {}): FakeServer {
  const ttftMs = o.ttftMs ?? 20;
  const itlMs = o.itlMs ?? 10;
  const bodies: Record<string, unknown>[] = [];
  const timings: Timing[] = [];
  const requestIds: (string | null)[] = [];
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const later = (ms: number, f: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      f();
    }, ms);
    timers.add(t);
  };
  const enc = new TextEncoder();
  const server: Server<unknown> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 30,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/v1/models") return Response.json({ object: "list", data: (o.models ?? ["fake-model"]).map((id) => ({ id, object: "model" })) });
      if (!path.endsWith("/completions") || req.method !== "POST") return Response.json({ error: { message: "no such route" } }, { status: 404 });
      const receivedMs = performance.now();
      const body = (await req.json()) as Record<string, unknown>;
      const n = bodies.length;
      bodies.push(body);
      requestIds.push(req.headers.get("x-request-id"));
      const timing: Timing = { receivedMs, chunkMs: [] };
      timings.push(timing);
      const behaviour = o.plan?.(n, body) ?? "ok";
      const headers: Record<string, string> = { "content-type": "text/event-stream" };
      const worker = o.worker?.(n);
      if (worker !== undefined) headers["x-kvcr-worker"] = worker;
      if (behaviour === "500") return Response.json({ error: { message: "injected failure", type: "server_error", code: 500 } }, { status: 500, headers });
      const chat = path.endsWith("/chat/completions");
      const maxTokens = body.max_tokens as number;
      const promptTokens = Array.isArray(body.prompt) ? body.prompt.length : String(body.prompt ?? JSON.stringify(body.messages)).split(" ").length;
      const chunk = (i: number) => (chat ? { choices: [{ index: 0, delta: { content: `t${i} ` }, finish_reason: null }] } : { choices: [{ index: 0, text: `t${i} `, finish_reason: null }] });
      let cancelled = false;
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          const send = (o: unknown) => !cancelled && controller.enqueue(enc.encode(`data: ${typeof o === "string" ? o : JSON.stringify(o)}\n\n`));
          const step = (i: number) => {
            if (cancelled) return;
            if (behaviour === "stall" && i === 1) return; // one token, then nothing
            if (behaviour === "cut" && i === 2) return controller.close(); // no [DONE]
            if (behaviour === "reset" && i === 2) return controller.error(new Error("injected reset")); // the connection dies mid-body
            if (behaviour === "error-chunk" && i === 1) {
              send({ error: { message: "injected stream error", code: 500 } });
              return controller.close();
            }
            if (i === maxTokens) {
              const cached = o.cachedTokens?.(promptTokens, n);
              timing.doneMs = performance.now();
              send({ choices: [], usage: { prompt_tokens: promptTokens, completion_tokens: maxTokens, total_tokens: promptTokens + maxTokens, ...(cached !== undefined ? { prompt_tokens_details: { cached_tokens: cached } } : {}) } });
              send("[DONE]");
              return controller.close();
            }
            // A burst: several content events in one write, which the client reads at once.
            const burst = Math.max(1, Math.min(o.chunksPerWrite ?? 1, maxTokens - i));
            let text = "";
            for (let k = 0; k < burst; k++) {
              timing.chunkMs.push(performance.now());
              text += `data: ${JSON.stringify(chunk(i + k))}\n\n`;
            }
            if (!cancelled) controller.enqueue(enc.encode(text));
            later(itlMs, () => step(i + burst));
          };
          later(ttftMs, () => step(0));
        },
        cancel() {
          cancelled = true;
        },
      });
      return new Response(stream, { headers });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    bodies,
    requestIds,
    timings,
    async [Symbol.asyncDispose]() {
      for (const t of timers) clearTimeout(t);
      await server.stop(true);
    },
  };
}
