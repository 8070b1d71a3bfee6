// Load-generating child process for bench/mocker-stream.ts and bench/mocker-scale.ts: keeps
// `concurrency` POST /v1/generate streams in flight against one mocker for `durationMs` (or
// `maxRequests`), counts token lines as they arrive and checks each response (exactly max_tokens
// token lines, then a summary line saying so). Prints one JSON report line.
// Argument: one JSON object (StreamClientJob).

export interface StreamClientJob {
  url: string;
  workers: number;
  concurrency: number;
  maxTokens: number;
  /** Prompt tokens unique to each request (after the shared prefix, if any). */
  promptTokens: number;
  /**
   * Shared prefixes: request n uses prefix n % groups, and each group's requests go to its own
   * slice of the workers, so prefixes hit the cache. Without it, request n goes to worker n % workers.
   */
  sharedPrefix?: { groups: number; tokens: number };
  durationMs: number;
  /** Stop starting requests after this many (default: no limit). */
  maxRequests?: number;
  /** Offset of this client's request ids and prompts, so several clients never collide. */
  clientIndex: number;
}

export interface StreamClientReport {
  tokens: number;
  requests: number;
  errors: string[];
  elapsedMs: number;
  /** Per-request time to first token line, ms (median). */
  ttftMedianMs: number;
  /** CPU time this client process used, seconds. */
  cpuSeconds: number;
  /** Body chunks read (each is one or more socket reads' worth of lines). */
  chunks: number;
}

const job = JSON.parse(process.argv[2] ?? "") as StreamClientJob;
const NEWLINE = 10;
let tokens = 0;
let requests = 0;
let chunks = 0;
const errors: string[] = [];
const ttfts: number[] = [];
const start = performance.now();
const deadline = start + job.durationMs;

const prefixes = Array.from({ length: job.sharedPrefix?.groups ?? 0 }, (_, g) => Array.from({ length: job.sharedPrefix!.tokens }, (_, i) => (g * 7919 + i * 31) % 32_000));
const workersPerGroup = Math.max(1, Math.floor(job.workers / Math.max(1, prefixes.length)));
let next = 0;

async function one(n: number): Promise<void> {
  const group = prefixes.length > 0 ? n % prefixes.length : 0;
  const worker = prefixes.length > 0 ? (group * workersPerGroup + (Math.floor(n / prefixes.length) % workersPerGroup)) % job.workers : n % job.workers;
  // The unique part differs per request so only the shared prefix is a cache hit.
  const unique = Array.from({ length: job.promptTokens }, (_, i) => (job.clientIndex * 1_000_003 + n * 101 + i) % 32_000);
  const tokenIds = prefixes.length > 0 ? [...prefixes[group]!, ...unique] : unique;
  const sent = performance.now();
  const res = await fetch(`${job.url}/v1/generate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ worker, token_ids: tokenIds, max_tokens: job.maxTokens, request_id: `c${job.clientIndex}-${n}` }),
  });
  if (res.status !== 200 || !res.body) {
    errors.push(`HTTP ${res.status}: ${await res.text()}`);
    return;
  }
  let lines = 0;
  let firstLine = "";
  // The stream's last bytes: the summary line is at most a few hundred bytes and may span chunks.
  let tail = new Uint8Array(0);
  for await (const chunk of res.body) {
    if (chunk.length === 0) continue;
    chunks++;
    if (lines === 0) {
      ttfts.push(performance.now() - sent);
      const nl = chunk.indexOf(NEWLINE);
      if (nl >= 0) firstLine = new TextDecoder().decode(chunk.subarray(0, nl));
    }
    let newlines = 0;
    for (let i = chunk.indexOf(NEWLINE); i >= 0; i = chunk.indexOf(NEWLINE, i + 1)) newlines++;
    lines += newlines;
    tokens += newlines; // the summary line is taken back below
    tail = chunk.length >= TAIL_BYTES ? chunk.slice(chunk.length - TAIL_BYTES) : concat(tail, chunk).slice(-TAIL_BYTES);
  }
  tokens--;
  const text = new TextDecoder().decode(tail);
  const last = text.slice(text.lastIndexOf("\n", text.length - 2) + 1, -1);
  const summary = JSON.parse(last) as { finish_reason: string; completion_tokens: number };
  if (lines !== job.maxTokens + 1 || summary.finish_reason !== "length" || summary.completion_tokens !== job.maxTokens || !/^\{"token_id":\d+\}$/.test(firstLine)) {
    errors.push(`request c${job.clientIndex}-${n}: ${lines} lines, first ${firstLine}, summary ${last}`);
  }
  requests++;
}

const TAIL_BYTES = 512;
function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

await Promise.all(
  Array.from({ length: job.concurrency }, async () => {
    while (performance.now() < deadline && next < (job.maxRequests ?? Infinity)) await one(next++).catch((e: unknown) => void errors.push(String(e)));
  }),
);
const sorted = ttfts.sort((a, b) => a - b);
const report: StreamClientReport = { tokens, requests, errors: errors.slice(0, 5), elapsedMs: performance.now() - start, ttftMedianMs: sorted[sorted.length >> 1] ?? NaN, cpuSeconds: (process.cpuUsage().user + process.cpuUsage().system) / 1e6, chunks };
console.log(JSON.stringify(report));
