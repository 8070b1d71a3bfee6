// The HTTP server (src/transport/http/server.ts, our HTTP/1.1 over Bun's TCP listener) against
// Bun.serve with the same app, on three shapes: a small JSON POST (the body read, a small JSON
// answer), an SSE stream of 64 chunks (a ReadableStream, one chunk per event-loop turn, as the
// frontend's tokens arrive) and an NDJSON stream of 64 lines (Bun's direct stream written by one
// loop for every open stream each turn, as the mocker's engine loop writes its tokens). Each server
// runs in its own process, the load in another (the frontend's keep-alive client, closed loop);
// the servers alternate within each run. Prints requests/s and the server's CPU µs per request for
// each (after a 2 s warm-up load per shape, not counted), and the ratio ours / Bun.serve; the summary
// is the median of the runs with their spread.
// Run: bun bench/http-server.ts [--runs 3] [--seconds 4] [--concurrency 32]
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { serveHttp } from "../src/transport/http/server.ts";
import { KeepAliveClient } from "../src/transport/http/keepalive-client.ts";
import { machineLine } from "./lib/machine.ts";

type Impl = "ours" | "bun";
type Shape = "json" | "sse" | "ndjson";
const SSE_CHUNKS = 64;
const WARMUP_S = 2;
const ENCODER = new TextEncoder();

/** The app both servers run. */
async function app(req: Request): Promise<Response> {
  const path = req.url.slice(req.url.indexOf("/", 8));
  if (path === "/json") {
    const body = (await req.json()) as { prompt: number[] };
    return Response.json({ id: "cmpl-1", object: "text_completion", tokens: body.prompt.length, choices: [{ index: 0, text: "ok", finish_reason: "length" }] });
  }
  if (path === "/sse") {
    await req.text();
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((resolve) => setImmediate(resolve)); // the next token comes on a later turn
        controller.enqueue(ENCODER.encode(`data: {"choices":[{"index":0,"text":" t${sent}"}]}\n\n`));
        if (++sent === SSE_CHUNKS) {
          controller.enqueue(ENCODER.encode("data: [DONE]\n\n"));
          controller.close();
        }
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
  }
  if (path === "/ndjson") {
    await req.text();
    // The mocker's shape: Bun's direct stream, written by one loop for every open stream each turn.
    const body = new ReadableStream({
      type: "direct",
      pull: (controller: ReadableStreamDirectController) => new Promise<void>((done) => streams.add({ controller, sent: 0, done })),
    }) as ReadableStream<Uint8Array>;
    if (!stepping) setImmediate(step);
    stepping = true;
    return new Response(body, { headers: { "content-type": "application/x-ndjson" } });
  }
  return new Response("not found", { status: 404 });
}

const TOKEN_LINE = ENCODER.encode('{"token_id":12345}\n');
const streams = new Set<{ controller: ReadableStreamDirectController; sent: number; done: () => void }>();
let stepping = false;

/** One engine step: a token line to every open stream, flushed, the finished ones closed. */
function step(): void {
  for (const s of streams) {
    s.controller.write(TOKEN_LINE);
    s.controller.flush();
    if (++s.sent === SSE_CHUNKS) {
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
      ? serveHttp({ host: "127.0.0.1", port: 0, fetch: app }).url
      : `http://127.0.0.1:${Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: app }).port}`;
  process.stdout.write(`${url}\n`);
  await new Promise(() => {}); // until killed
}

async function load(url: string, seconds: number, concurrency: number): Promise<void> {
  const client = new KeepAliveClient({ maxIdlePerOrigin: 1024 });
  const body = JSON.stringify({ model: "m", prompt: Array.from({ length: 64 }, (_, i) => 1000 + i), max_tokens: 16 });
  const headers = { "content-type": "application/json" };
  const end = performance.now() + seconds * 1000;
  let completed = 0;
  let failed = 0;
  let firstError: string | undefined;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
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
      }
    }),
  );
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

interface Figure {
  rps: number;
  cpuUs: number;
}

async function measure(impl: Impl, shapes: readonly Shape[], seconds: number, concurrency: number): Promise<Record<Shape, Figure>> {
  const server = Bun.spawn([process.execPath, import.meta.path, "serve", impl], { stdout: "pipe", stderr: "inherit" });
  try {
    const url = await firstLine(server.stdout);
    const out = {} as Record<Shape, Figure>;
    const loadRun = async (shape: Shape, secs: number) => {
      const client = Bun.spawn([process.execPath, import.meta.path, "load", `${url}/${shape}`, String(secs), String(concurrency)], { stdout: "pipe", stderr: "inherit" });
      const report = JSON.parse((await new Response(client.stdout).text()).trim()) as { completed: number; failed: number; firstError?: string };
      if (report.failed > 0) throw new Error(`${impl} ${shape}: ${report.failed} request(s) failed, first: ${report.firstError}`);
      return report.completed;
    };
    for (const shape of shapes) {
      // A warm-up load first, not counted: the JIT compiles our server's code then (Bun.serve's is native).
      await loadRun(shape, WARMUP_S);
      const cpu0 = await cpuSeconds(server.pid);
      const t0 = performance.now();
      const completed = await loadRun(shape, seconds);
      const wall = (performance.now() - t0) / 1000;
      const cpu = (await cpuSeconds(server.pid)) - cpu0;
      out[shape] = { rps: completed / wall, cpuUs: (cpu * 1e6) / completed };
    }
    return out;
  } finally {
    server.kill();
    await server.exited;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number, d = 1) => n.toFixed(d);

async function main(): Promise<void> {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { runs: { type: "string", default: "3" }, seconds: { type: "string", default: "4" }, concurrency: { type: "string", default: "32" } } });
  const runs = Number(values.runs);
  const seconds = Number(values.seconds);
  const concurrency = Number(values.concurrency);
  const shapes: Shape[] = ["json", "sse", "ndjson"];
  console.log(`# HTTP server: ours vs Bun.serve, ${runs} run(s) × ${seconds} s per shape, ${concurrency} in flight; ${machineLine()}`);
  const results: Record<Impl, Record<Shape, Figure>[]> = { ours: [], bun: [] };
  for (let run = 0; run < runs; run++) {
    // Alternated: whichever goes first in a run goes second in the next.
    const order: Impl[] = run % 2 === 0 ? ["ours", "bun"] : ["bun", "ours"];
    for (const impl of order) {
      const r = await measure(impl, shapes, seconds, concurrency);
      results[impl].push(r);
      console.log(`run ${run + 1} ${impl.padEnd(4)}  ${shapes.map((s) => `${s}: ${fmt(r[s].rps, 0)} req/s, ${fmt(r[s].cpuUs)} µs CPU/req`).join("   ")}`);
    }
  }
  for (const shape of shapes) {
    const ratios = results.ours.map((o, i) => o[shape].cpuUs / results.bun[i]![shape].cpuUs);
    const ours = results.ours.map((r) => r[shape]);
    const bun = results.bun.map((r) => r[shape]);
    console.log(
      `${shape}: ours ${fmt(median(ours.map((f) => f.rps)), 0)} req/s, ${fmt(median(ours.map((f) => f.cpuUs)))} µs CPU/req; Bun.serve ${fmt(median(bun.map((f) => f.rps)), 0)} req/s, ${fmt(median(bun.map((f) => f.cpuUs)))} µs CPU/req; CPU ratio ${fmt(median(ratios), 2)}× (${ratios.map((r) => fmt(r, 2)).join(" / ")})`,
    );
  }
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === "serve") await serve(rest[0] as Impl);
else if (mode === "load") await load(rest[0]!, Number(rest[1]), Number(rest[2]));
else await main();
