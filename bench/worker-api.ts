// The worker API's cost, two figures:
// 1. Mocker CPU per request through a worker's OpenAI API against the same requests through
//    /v1/generate, on the same engines: one `kvcr-mock mocker` child (8 workers, API on), a load
//    child sending requests at a fixed rate; the same prompts (token ids from the worker's /tokenize),
//    workers and max_tokens both ways; CPU from /proc per phase, phases alternated. Two API forms:
//    streamed chat with text prompts (tokenized by the mocker) and streamed completions with
//    token-id prompts. The ratio is API / generate.
// 2. 1,024 workers in one mocker, with and without the API: spawn to /health 200 and RSS once
//    healthy; the RSS difference per worker.
// Medians of BENCH_RUNS (3) alternated runs. The machine is shared: the last line reports its load.
// Run: `npx bun bench/worker-api.ts` (~2 min; BENCH_RUNS, BENCH_PHASE_MS, BENCH_RATE,
// BENCH_MAX_TOKENS, BENCH_SCALE_WORKERS adjust it).
import { runHttpLoad, type HttpLoadJob } from "./lib/http-load.ts";
import { machineLine } from "./lib/machine.ts";
import { envNumber } from "./lib/measure.ts";
import { MockerChild } from "./lib/mocker-child.ts";

const RUNS = envNumber("BENCH_RUNS", 3);
const PHASE_MS = envNumber("BENCH_PHASE_MS", 4000);
/** Requests per second, the same for every form, so the engines batch alike (a closed loop would let each form's latency set its own batches). */
const RATE = envNumber("BENCH_RATE", 100);
const MAX_TOKENS = envNumber("BENCH_MAX_TOKENS", 32);
const SCALE_WORKERS = envNumber("BENCH_SCALE_WORKERS", 1024);
const WORKERS = 8;
const MODEL = "mocker-engine";
const PROMPTS = 64;

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (n: number, d = 0) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });

/** Chat prompts: 8 shared system prompts, a distinct user turn each. */
function messages(i: number) {
  const system = `You are assistant ${i % 8}. ${"Answer briefly and cite the cache. ".repeat(6)}`;
  return [{ role: "system", content: system }, { role: "user", content: `Question ${i}: how does prefix caching help request ${i * 7}?` }];
}

async function post(url: string, body: unknown): Promise<unknown> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** CPU µs the mocker spends per completed request under one load job. */
async function cpuPerRequest(m: MockerChild, job: HttpLoadJob): Promise<number> {
  const before = await m.cpuSeconds();
  const report = await runHttpLoad(job);
  const after = await m.cpuSeconds();
  if (report.failed > 0 || report.completed === 0) throw new Error(`load failed: ${report.failed} failed, first error ${report.firstError}`);
  // Warm-up and tail requests cost CPU too: divide by every request the phase made (all answered).
  return ((after - before) * 1e6) / report.made;
}

async function perRequestCpu(): Promise<void> {
  await using m = await MockerChild.spawn(["--num-workers", String(WORKERS), "--block-size", "16", "--num-gpu-blocks-override", "8192", "--openai-port-base", "0"]);
  await m.waitHealthy(60_000);
  const urls = (await m.workerRecords()).sort((a, b) => a.worker_index - b.worker_index).map((r) => r.openai_url!);
  const prompts = await Promise.all(Array.from({ length: PROMPTS }, async (_, i) => ((await post(`${urls[0]}/tokenize`, { model: MODEL, messages: messages(i) })) as { tokens: number[] }).tokens));
  const forms: Record<string, HttpLoadJob["requests"]> = {
    "/v1/generate": prompts.map((tokens, i) => ({ url: `${m.httpUrl}/v1/generate`, body: JSON.stringify({ worker: i % WORKERS, dp_rank: 0, token_ids: tokens, max_tokens: MAX_TOKENS }) })),
    "chat, streamed, text": prompts.map((_, i) => ({ url: `${urls[i % WORKERS]}/v1/chat/completions`, body: JSON.stringify({ model: MODEL, messages: messages(i), max_tokens: MAX_TOKENS, stream: true, stream_options: { include_usage: true } }) })),
    "completions, streamed, token ids": prompts.map((tokens, i) => ({ url: `${urls[i % WORKERS]}/v1/completions`, body: JSON.stringify({ model: MODEL, prompt: tokens, max_tokens: MAX_TOKENS, stream: true }) })),
  };
  const names = Object.keys(forms);
  const samples = new Map<string, number[]>(names.map((k) => [k, []]));
  for (let run = 0; run < RUNS; run++) {
    // Each run takes every form once, back to back (they share the machine's load), the first form rotating.
    for (let k = 0; k < names.length; k++) {
      const name = names[(run + k) % names.length]!;
      const us = await cpuPerRequest(m, { url: "", body: "completion", requests: forms[name], mode: { kind: "open", ratePerS: RATE }, durationMs: PHASE_MS, warmupMs: 500 });
      samples.get(name)!.push(us);
    }
  }
  const base = samples.get("/v1/generate")!;
  console.log(`mocker CPU per request, ${WORKERS} workers, ${MAX_TOKENS} tokens each, ${RATE} requests/s, median of ${RUNS}; ratio = the median of each run's ratio to /v1/generate:`);
  for (const [name, us] of samples) {
    const ratios = us.map((x, run) => x / base[run]!);
    console.log(`  ${name.padEnd(34)} ${fmt(median(us)).padStart(6)} µs  (runs: ${us.map((x) => fmt(x)).join(", ")})${name === "/v1/generate" ? "" : `  ratio ${fmt(median(ratios), 2)} (${ratios.map((r) => fmt(r, 2)).join(", ")})`}`);
  }
}

async function scale(): Promise<void> {
  const runs: Record<"without" | "with", { healthyMs: number; rss: number }[]> = { without: [], with: [] };
  for (let run = 0; run < RUNS; run++) {
    for (const api of ["without", "with"] as const) {
      await using m = await MockerChild.spawn(["--num-workers", String(SCALE_WORKERS), ...(api === "with" ? ["--openai-port-base", "0"] : [])]);
      const { healthyMs } = await m.waitHealthy(120_000);
      runs[api].push({ healthyMs, rss: await m.rssBytes() });
    }
  }
  const mid = (api: "without" | "with", key: "healthyMs" | "rss") => median(runs[api].map((r) => r[key]));
  console.log(`${fmt(SCALE_WORKERS)} workers in one mocker, spawn to /health 200 and RSS once healthy, median of ${RUNS}:`);
  for (const api of ["without", "with"] as const) {
    console.log(`  ${api} the worker API: ${fmt(mid(api, "healthyMs"))} ms, RSS ${fmt(mid(api, "rss") / 2 ** 20, 1)} MiB  (runs: ${runs[api].map((r) => `${fmt(r.healthyMs)} ms / ${fmt(r.rss / 2 ** 20, 1)} MiB`).join(", ")})`);
  }
  console.log(`  the API adds ${fmt(mid("with", "healthyMs") - mid("without", "healthyMs"))} ms to start-up and ${fmt((mid("with", "rss") - mid("without", "rss")) / SCALE_WORKERS / 1024, 1)} KiB of RSS per worker`);
}

await perRequestCpu();
await scale();
console.log(machineLine());
