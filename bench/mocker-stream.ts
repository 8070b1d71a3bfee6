// Streamed tokens/s out of one mocker process at --speedup-ratio 0 (target ≥ 300,000/s): a
// `kvcr-mock mocker` child and client child process(es) keeping many /v1/generate streams in
// flight; prints tokens/s received by the clients, against the peer measured in the same run: the
// same engines and pool driven in-process with no HTTP (what the engines alone can generate).
// Run: `npx bun bench/mocker-stream.ts` (~15 s; env BENCH_WORKERS, BENCH_CONCURRENCY,
// BENCH_MAX_TOKENS, BENCH_PROMPT_TOKENS, BENCH_DURATION_MS, BENCH_CLIENTS adjust it).
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config/load.ts";
import { mockerOptions, type MockerConfig } from "../src/config/mocker.ts";
import { createLogger } from "../src/lib/logger.ts";
import { startMocker } from "../src/roles/mocker/index.ts";
import { runStreamClients } from "./lib/clients.ts";
import { figure } from "./lib/figures.ts";
import { envNumber } from "./lib/measure.ts";
import { MockerChild } from "./lib/mocker-child.ts";
import type { StreamClientJob, StreamClientReport } from "./lib/stream-client.ts";

const WORKERS = envNumber("BENCH_WORKERS", 4);
const CONCURRENCY = envNumber("BENCH_CONCURRENCY", 256);
const MAX_TOKENS = envNumber("BENCH_MAX_TOKENS", 256);
const PROMPT_TOKENS = envNumber("BENCH_PROMPT_TOKENS", 64);
const DURATION_MS = envNumber("BENCH_DURATION_MS", 6000);
const CLIENTS = envNumber("BENCH_CLIENTS", 1);
const FLAGS = ["--num-workers", String(WORKERS), "--speedup-ratio", "0", "--block-size", "16", "--num-gpu-blocks-override", "8192"];
const GENERATED = "kvcr_mocker_generated_tokens_total";
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

function runClients(url: string, durationMs: number): Promise<StreamClientReport[]> {
  return runStreamClients(
    Array.from({ length: CLIENTS }, (_, c): StreamClientJob => ({
      url,
      workers: WORKERS,
      concurrency: Math.ceil(CONCURRENCY / CLIENTS),
      maxTokens: MAX_TOKENS,
      promptTokens: PROMPT_TOKENS,
      durationMs,
      clientIndex: c,
    })),
  );
}

/**
 * The peer: the same mocker (engines, live loop, pool) started in this process, fed the same
 * load through pool.submit with sinks that only count: tokens/s with no HTTP and no sockets.
 */
async function enginesAlone(durationMs: number): Promise<{ tokensPerS: number; cpuShare: number }> {
  const dir = await mkdtemp(join(tmpdir(), "kvcr-bench-stream-"));
  const { config } = loadConfig(mockerOptions, { argv: [...FLAGS, "--discovery-dir", dir] });
  const m = await startMocker(config as MockerConfig, { logger: createLogger({ level: "warn", tag: "bench" }), env: {} });
  try {
    await m.ready;
    let tokens = 0;
    let n = 0;
    const start = performance.now();
    const cpu0 = process.cpuUsage();
    await new Promise<void>((resolve) => {
      let inFlight = 0;
      const submit = () => {
        const id = n++;
        inFlight++;
        const tokenIds = Array.from({ length: PROMPT_TOKENS }, (_, i) => (id * 101 + i) % 32_000);
        const out = m.pool.submit({ worker: id % WORKERS, dpRank: 0, tokenIds, maxTokens: MAX_TOKENS }, {
          tokens: (ids) => void (tokens += ids.length),
          finish: () => {
            inFlight--;
            if (performance.now() - start < durationMs) submit();
            else if (inFlight === 0) resolve();
          },
        });
        // An aggregated mocker answers at once (only a decode worker's pull is asynchronous).
        if (out instanceof Promise) throw new Error("engines-alone submit: expected an aggregated mocker");
        if (!out.ok) throw new Error(`engines-alone submit refused: ${out.message}`);
      };
      for (let i = 0; i < CONCURRENCY; i++) submit();
    });
    const s = (performance.now() - start) / 1000;
    const cpu = process.cpuUsage(cpu0);
    return { tokensPerS: tokens / s, cpuShare: (cpu.user + cpu.system) / 1e6 / s };
  } finally {
    await m.close();
    await rm(dir, { recursive: true, force: true });
  }
}

console.log(`mocker stream: ${WORKERS} worker(s) at --speedup-ratio 0, ${CONCURRENCY} streams in flight from ${CLIENTS} client process(es), prompt ${PROMPT_TOKENS} tokens, max_tokens ${MAX_TOKENS}; Bun ${Bun.version}, ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)}`);
{
  await using mocker = await MockerChild.spawn(FLAGS);
  await mocker.waitHealthy(30_000);
  await runClients(mocker.httpUrl, 1000); // warm-up: JIT on both sides
  const before = (await mocker.metricSums([GENERATED])).get(GENERATED)!;
  const cpu0 = await mocker.cpuSeconds();
  const reports = await runClients(mocker.httpUrl, DURATION_MS);
  const mockerCpuS = (await mocker.cpuSeconds()) - cpu0;
  const generated = (await mocker.metricSums([GENERATED])).get(GENERATED)! - before;

  const sum = (pick: (r: StreamClientReport) => number) => reports.reduce((n, r) => n + pick(r), 0);
  const tokens = sum((r) => r.tokens);
  const elapsedS = Math.max(...reports.map((r) => r.elapsedMs)) / 1000;
  const errors = reports.flatMap((r) => r.errors);
  const streamed = tokens / elapsedS;
  console.log(`  streamed to clients: ${fmt(streamed)} tokens/s (${fmt(tokens)} tokens, ${sum((r) => r.requests)} requests in ${elapsedS.toFixed(1)} s; ${(tokens / sum((r) => r.chunks)).toFixed(1)} tokens per chunk read; median time to first token ${Math.max(...reports.map((r) => r.ttftMedianMs)).toFixed(1)} ms)`);
  console.log(`  the mocker's kvcr_mocker_generated_tokens_total over the run: ${fmt(generated / elapsedS)}/s (streamed/generated ${(tokens / generated).toFixed(3)}); malformed or short responses: ${errors.length}${errors.length ? ` (${errors.join("; ")})` : ""}`);
  console.log(`  CPU: mocker ${((mockerCpuS / elapsedS) * 100).toFixed(0)}% of a core (${((mockerCpuS / tokens) * 1e6).toFixed(2)} µs per token), client(s) ${((sum((r) => r.cpuSeconds) / elapsedS) * 100).toFixed(0)}%`);
  figure("streamed tokens/s", streamed, "tokens/s", "higher");
  figure("mocker CPU per streamed token", (mockerCpuS / tokens) * 1e6, "µs", "lower");
  figure("mocker CPU per stream", (mockerCpuS / sum((r) => r.requests)) * 1e6, "µs", "lower");
  const peer = await enginesAlone(Math.min(DURATION_MS, 3000));
  figure("engines alone tokens/s", peer.tokensPerS, "tokens/s", "higher");
  console.log(`  peer, engines alone in-process (no HTTP): ${fmt(peer.tokensPerS)} tokens/s at ${(peer.cpuShare * 100).toFixed(0)}% of a core → streaming delivers ${((streamed / peer.tokensPerS) * 100).toFixed(0)}% of it`);
  console.log(`  target ≥ 300,000 streamed tokens/s: ${streamed >= 300_000 ? "met" : "NOT met"}`);
}
