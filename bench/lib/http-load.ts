// An HTTP load generator child for bench/ scripts (so client work does not share the bench
// process's event loop): POSTs JSON bodies to one URL, closed loop (N in flight) or open loop
// (fixed rate), reads each response fully, and prints one JSON report on stdout.
// Bodies: "completion" = OpenAI /v1/completions with a token-id prompt; "generate" = a mocker
// /v1/generate body (round-robin over `workers`). Prompts: 8 shared 48-token prefixes + 16 unique tokens.
// Or `requests`: prepared bodies, each with its URL, taken in turn.
import { percentile } from "../../src/core/replay/stats.ts";
import { KeepAliveClient } from "../../src/transport/http/keepalive-client.ts";

const JSON_HEADERS = { "content-type": "application/json" };

export interface HttpLoadJob {
  url: string;
  /** Instead of `url` and `body`: request i is requests[i % length] (prepared bodies, each with its URL). */
  requests?: { url: string; body: string }[];
  body: "completion" | "generate";
  model?: string;
  workers?: number;
  mode: { kind: "closed"; concurrency: number } | { kind: "open"; ratePerS: number };
  durationMs: number;
  warmupMs: number;
}

export interface HttpLoadReport {
  completed: number;
  failed: number;
  firstError?: string;
  durationS: number;
  requestsPerS: number;
  p50Ms: number;
  p99Ms: number;
  /** The load generator's own CPU µs per request it made (warm-up included). */
  clientCpuUsPerRequest: number;
  /** Every request made, warm-up and tail included (closed loop: all of them were answered). */
  made: number;
}

function prompt(i: number): number[] {
  const p = i % 8;
  return [...Array.from({ length: 48 }, (_, k) => 1000 * (p + 1) + k), ...Array.from({ length: 16 }, (_, k) => 100_000 + ((i * 16 + k) % 1_000_000))];
}

function bodyOf(job: HttpLoadJob, i: number): string {
  if (job.body === "completion") return JSON.stringify({ model: job.model, prompt: prompt(i), max_tokens: 1 });
  return JSON.stringify({ worker: i % (job.workers ?? 1), dp_rank: 0, token_ids: prompt(i), max_tokens: 1 });
}

async function main(job: HttpLoadJob): Promise<HttpLoadReport> {
  // The pooled keep-alive client the frontend uses for its workers: cheaper per request than
  // fetch, so the load generator leaves more of the machine to the processes measured.
  const client = new KeepAliveClient({ maxIdlePerOrigin: 1024 });
  let i = 0;
  let completed = 0;
  let failed = 0;
  let firstError: string | undefined;
  let made = 0;
  const cpu0 = process.cpuUsage();
  const latencies: number[] = [];
  const t0 = performance.now();
  const measureFrom = t0 + job.warmupMs;
  const end = measureFrom + job.durationMs;
  const one = async () => {
    const n = i++;
    made++;
    const start = performance.now();
    try {
      const prepared = job.requests?.[n % job.requests.length];
      const res = await client.request(prepared?.url ?? job.url, { method: "POST", body: prepared?.body ?? bodyOf(job, n), headers: JSON_HEADERS });
      let size = 0;
      let last: Uint8Array | undefined;
      for (let c = await res.read(); c !== undefined; c = await res.read()) {
        size += c.length;
        last = c;
      }
      if (res.status !== 200 || size === 0) throw new Error(`${res.status}: ${last ? Buffer.from(last).toString().slice(0, 200) : "(empty body)"}`);
    } catch (err) {
      if (start >= measureFrom) failed++;
      firstError ??= (err as Error).message;
      return;
    }
    const done = performance.now();
    if (start >= measureFrom && done <= end) {
      completed++;
      latencies.push(done - start);
    }
  };
  if (job.mode.kind === "closed") {
    await Promise.all(
      Array.from({ length: job.mode.concurrency }, async () => {
        while (performance.now() < end) await one();
      }),
    );
  } else {
    const gapMs = 1000 / job.mode.ratePerS;
    const inflight: Promise<void>[] = [];
    let next = performance.now();
    while (next < end) {
      const wait = next - performance.now();
      if (wait > 0) await Bun.sleep(wait);
      inflight.push(one());
      next += gapMs;
    }
    await Promise.all(inflight);
  }
  client.close();
  const cpu = process.cpuUsage(cpu0);
  const clientCpuUsPerRequest = (cpu.user + cpu.system) / Math.max(1, made);
  const durationS = job.durationMs / 1000;
  const sorted = Float64Array.from(latencies);
  return { completed, failed, firstError, durationS, requestsPerS: completed / durationS, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), clientCpuUsPerRequest, made };
}

if (import.meta.main) {
  const job = JSON.parse(process.argv[2]!) as HttpLoadJob;
  process.stdout.write(JSON.stringify(await main(job)) + "\n");
}

/** Runs one job in a child process and returns its report. */
export async function runHttpLoad(job: HttpLoadJob): Promise<HttpLoadReport> {
  const p = Bun.spawn([process.execPath, import.meta.path, JSON.stringify(job)], { stdout: "pipe", stderr: "inherit" });
  try {
    const out = await new Response(p.stdout).text();
    if ((await p.exited) !== 0) throw new Error(`load generator exited with ${p.exitCode}`);
    return JSON.parse(out.trim()) as HttpLoadReport;
  } finally {
    if (p.exitCode === null) p.kill();
  }
}
