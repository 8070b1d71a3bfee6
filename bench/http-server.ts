// The HTTP server (src/transport/http/server.ts, our HTTP/1.1 over Bun's TCP listener) against
// Bun.serve with the same app, on three shapes: a small JSON POST (the body read, a small JSON
// answer), an SSE stream of 64 chunks (a ReadableStream, one chunk per event-loop turn, as the
// frontend's tokens arrive) and an NDJSON stream of 64 lines (a pushed body written by one loop for
// every open stream each turn, as the mocker's engine loop writes its tokens: Bun.serve reads it as
// Bun's direct stream, ours drives it).
// Method: each server in its own process, each with its own load process (the frontend's
// keep-alive client, open loop at the same fixed rate, so both see the same request pattern); the
// two pairs run at the same time, so whatever else loads the machine loads both alike. After a
// warm-up (the JIT compiles our server's code then; Bun.serve's is native), the server's CPU time
// over the measured window per completed request. Prints each run and the median ratio ours /
// Bun.serve with its spread. Then each server alone at full load (closed loop), alternated:
// requests/s and CPU per request there.
// Run: bun bench/http-server.ts [--runs 5] [--seconds 4] [--shapes json,sse,ndjson] (env BENCH_WARMUP_S: warm-up seconds, 10)
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { directResponse, type DirectSink } from "../src/transport/http/direct-response.ts";
import { serveHttp } from "../src/transport/http/server.ts";
import { KeepAliveClient } from "../src/transport/http/keepalive-client.ts";
import { machineLine } from "./lib/machine.ts";

type Impl = "ours" | "bun";
type Shape = "json" | "sse" | "ndjson";
const SHAPES: readonly Shape[] = ["json", "sse", "ndjson"];
/** Requests per second per server: well within what either sustains on 2 shared cores, so both run unsaturated. */
const RATE: Record<Shape, number> = { json: 3000, sse: 200, ndjson: 200 };
const CHUNKS = 64;
const MAX_IN_FLIGHT = 64;
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 10);
const ENCODER = new TextEncoder();

/** The app both servers run. */
async function app(req: Request, impl: Impl): Promise<Response> {
  const path = req.url.slice(req.url.indexOf("/", 8));
  if (path === "/json") {
    const body = (await req.json()) as { prompt: number[] };
    return Response.json({ id: "cmpl-1", object: "text_completion", tokens: body.prompt.length, choices: [{ index: 0, text: "ok", finish_reason: "length" }] });
  }
  await req.text();
  if (path === "/sse") {
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((resolve) => setImmediate(resolve)); // the next token comes on a later turn
        controller.enqueue(ENCODER.encode(`data: {"choices":[{"index":0,"text":" t${sent}"}]}\n\n`));
        if (++sent === CHUNKS) {
          controller.enqueue(ENCODER.encode("data: [DONE]\n\n"));
          controller.close();
        }
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
  }
  if (path === "/ndjson") {
    // The mocker's shape: a pushed body written by one loop for every open stream each turn, as a
    // DirectResponse (what the mocker answers; ours drives it, any other server reads its direct stream).
    const source = { pull: (controller: DirectSink) => new Promise<void>((done) => streams.add({ controller, sent: 0, done })), cancel: () => {} };
    if (!stepping) setImmediate(step);
    stepping = true;
    const res = directResponse(source, { headers: { "content-type": "application/x-ndjson" } });
    // Bun.serve takes only its own Response: the same source as Bun's direct stream.
    return impl === "bun" ? new Response(res.body, { headers: { "content-type": "application/x-ndjson" } }) : res;
  }
  return new Response("not found", { status: 404 });
}

const TOKEN_LINE = ENCODER.encode('{"token_id":12345}\n');
const streams = new Set<{ controller: DirectSink; sent: number; done: () => void }>();
let stepping = false;

/** One engine step: a token line to every open stream, flushed, the finished ones closed. */
function step(): void {
  for (const s of streams) {
    s.controller.write(TOKEN_LINE);
    s.controller.flush();
    if (++s.sent === CHUNKS) {
      s.controller.close();
      s.done();
      streams.delete(s);
    }
  }
  stepping = streams.size > 0;
  if (stepping) setImmediate(step);
}

async function serve(impl: Impl): Promise<void> {
  const url =
    impl === "ours"
      ? serveHttp({ host: "127.0.0.1", port: 0, fetch: (req) => app(req, impl) }).url
      : `http://127.0.0.1:${Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => app(req, impl) }).port}`;
  process.stdout.write(`${url}\n`);
  await new Promise(() => {}); // until killed
}

/**
 * Paced (rate > 0): a request every 1/rate s for `seconds`, at most MAX_IN_FLIGHT at once (a stall
 * waits instead of opening connections without bound). Closed loop (rate 0): MAX_IN_FLIGHT / 2
 * requests always in flight. Prints how many completed and failed.
 */
async function load(url: string, seconds: number, rate: number): Promise<void> {
  const client = new KeepAliveClient({ maxIdlePerOrigin: 1024 });
  const body = JSON.stringify({ model: "m", prompt: Array.from({ length: 64 }, (_, i) => 1000 + i), max_tokens: 16 });
  const headers = { "content-type": "application/json" };
  let completed = 0;
  let failed = 0;
  let firstError: string | undefined;
  const one = async () => {
    try {
      const res = await client.request(url, { method: "POST", body, headers });
      let size = 0;
      for (let c = await res.read(); c !== undefined; c = await res.read()) size += c.length;
      if (res.status !== 200 || size === 0) throw new Error(`status ${res.status}, ${size} bytes`);
      completed++;
    } catch (err) {
      failed++;
      firstError ??= (err as Error).message;
    }
  };
  const inflight = new Set<Promise<void>>();
  const gapMs = 1000 / rate;
  const start = performance.now();
  if (rate === 0) {
    const end = start + seconds * 1000;
    await Promise.all(Array.from({ length: MAX_IN_FLIGHT / 2 }, async () => {
      while (performance.now() < end) await one();
    }));
  }
  for (let i = 0; i < rate * seconds; i++) {
    const wait = start + i * gapMs - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    while (inflight.size >= MAX_IN_FLIGHT) await Promise.race(inflight);
    const p = one().then(() => void inflight.delete(p));
    inflight.add(p);
  }
  await Promise.all(inflight);
  client.close();
  process.stdout.write(`${JSON.stringify({ completed, failed, firstError })}\n`);
}

async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the server exited before printing its URL (got ${JSON.stringify(text)})`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return text.slice(0, text.indexOf("\n"));
}

async function loadRun(url: string, seconds: number, rate: number, what: string): Promise<number> {
  const client = Bun.spawn([process.execPath, import.meta.path, "load", url, String(seconds), String(rate)], { stdout: "pipe", stderr: "inherit" });
  const report = JSON.parse((await new Response(client.stdout).text()).trim()) as { completed: number; failed: number; firstError?: string };
  if (report.failed > 0) throw new Error(`${what}: ${report.failed} request(s) failed, first: ${report.firstError}`);
  return report.completed;
}

/** Both servers at once, each with its own load at the same rate: CPU µs per request for each. */
async function pairedRun(shape: Shape, seconds: number): Promise<Record<Impl, number>> {
  const impls: Impl[] = ["ours", "bun"];
  const servers = impls.map((impl) => Bun.spawn([process.execPath, import.meta.path, "serve", impl], { stdout: "pipe", stderr: "inherit" }));
  try {
    const urls = await Promise.all(servers.map((s) => firstLine(s.stdout)));
    await Promise.all(urls.map((url, i) => loadRun(`${url}/${shape}`, WARMUP_S, RATE[shape], `${impls[i]} ${shape} warm-up`)));
    const cpu0 = await Promise.all(servers.map((s) => cpuSeconds(s.pid)));
    const completed = await Promise.all(urls.map((url, i) => loadRun(`${url}/${shape}`, seconds, RATE[shape], `${impls[i]} ${shape}`)));
    const cpu = await Promise.all(servers.map((s, i) => cpuSeconds(s.pid).then((c) => c - cpu0[i]!)));
    return { ours: (cpu[0]! * 1e6) / completed[0]!, bun: (cpu[1]! * 1e6) / completed[1]! };
  } finally {
    for (const s of servers) s.kill();
    await Promise.all(servers.map((s) => s.exited));
  }
}

/** One server alone under closed-loop load: requests/s and CPU µs per request, after the warm-up. */
async function saturatedRun(impl: Impl, shape: Shape, seconds: number): Promise<{ rps: number; cpuUs: number }> {
  const server = Bun.spawn([process.execPath, import.meta.path, "serve", impl], { stdout: "pipe", stderr: "inherit" });
  try {
    const url = `${await firstLine(server.stdout)}/${shape}`;
    await loadRun(url, WARMUP_S, 0, `${impl} ${shape} warm-up`);
    const cpu0 = await cpuSeconds(server.pid);
    const t0 = performance.now();
    const completed = await loadRun(url, seconds, 0, `${impl} ${shape}`);
    const wall = (performance.now() - t0) / 1000;
    return { rps: completed / wall, cpuUs: (((await cpuSeconds(server.pid)) - cpu0) * 1e6) / completed };
  } finally {
    server.kill();
    await server.exited;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number, d = 1) => n.toFixed(d);

async function main(): Promise<void> {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { runs: { type: "string", default: "5" }, seconds: { type: "string", default: "4" }, shapes: { type: "string", default: SHAPES.join(",") } } });
  const runs = Number(values.runs);
  const seconds = Number(values.seconds);
  const shapes = values.shapes.split(",") as Shape[];
  const unknown = shapes.filter((s) => !SHAPES.includes(s));
  if (unknown.length > 0 || !(runs >= 1) || !(seconds > 0)) {
    console.error(`usage: bun bench/http-server.ts [--runs N ≥ 1] [--seconds S > 0] [--shapes ${SHAPES.join(",")}]${unknown.length ? `; unknown shape(s): ${unknown.join(", ")}` : ""}`);
    process.exit(2);
  }
  console.log(`# HTTP server: ours vs Bun.serve side by side, ${runs} run(s) × ${seconds} s per shape at ${shapes.map((s) => `${s} ${RATE[s]}/s`).join(", ")}`);
  const results: Record<Shape, Record<Impl, number>[]> = { json: [], sse: [], ndjson: [] };
  for (let run = 0; run < runs; run++) {
    for (const shape of shapes) {
      const r = await pairedRun(shape, seconds);
      results[shape].push(r);
      console.log(`run ${run + 1} ${shape.padEnd(6)} ours ${fmt(r.ours)} µs CPU/req, Bun.serve ${fmt(r.bun)} µs CPU/req: ${fmt(r.ours / r.bun, 2)}×`);
    }
  }
  for (const shape of shapes) {
    const ratios = results[shape].map((r) => r.ours / r.bun);
    console.log(
      `${shape}: ours ${fmt(median(results[shape].map((r) => r.ours)))} µs CPU/req, Bun.serve ${fmt(median(results[shape].map((r) => r.bun)))} µs CPU/req; ratio ${fmt(median(ratios), 2)}× (${fmt(Math.min(...ratios), 2)}–${fmt(Math.max(...ratios), 2)})`,
    );
  }
  // Then each server alone at full load, alternated: throughput (which the load client, on the same cores, also limits).
  console.log(`# saturated: each server alone, ${MAX_IN_FLIGHT / 2} in flight, alternated`);
  const saturated: Record<Shape, Record<Impl, { rps: number; cpuUs: number }[]>> = { json: { ours: [], bun: [] }, sse: { ours: [], bun: [] }, ndjson: { ours: [], bun: [] } };
  for (let run = 0; run < runs; run++) {
    for (const impl of (run % 2 === 0 ? ["ours", "bun"] : ["bun", "ours"]) as Impl[]) {
      for (const shape of shapes) saturated[shape][impl].push(await saturatedRun(impl, shape, seconds));
    }
  }
  for (const shape of shapes) {
    const o = saturated[shape].ours;
    const b = saturated[shape].bun;
    const ratios = o.map((x, i) => x.cpuUs / b[i]!.cpuUs);
    console.log(
      `${shape}: ours ${fmt(median(o.map((x) => x.rps)), 0)} req/s, ${fmt(median(o.map((x) => x.cpuUs)))} µs CPU/req; Bun.serve ${fmt(median(b.map((x) => x.rps)), 0)} req/s, ${fmt(median(b.map((x) => x.cpuUs)))} µs CPU/req; CPU ratio ${fmt(median(ratios), 2)}× (${fmt(Math.min(...ratios), 2)}–${fmt(Math.max(...ratios), 2)})`,
    );
  }
  console.log(machineLine());
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === "serve") await serve(rest[0] as Impl);
else if (mode === "load") await load(rest[0]!, Number(rest[1]), Number(rest[2]));
else await main();
