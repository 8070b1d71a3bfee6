// A KV-aware router in front of kvcr-mock's workers with no kvcr-mock frontend, the way llm-d's,
// SGLang's or a team's own router drives vLLM: it subscribes to every worker rank's raw KV events
// (vLLM's ZeroMQ stream, read with the project's own ZMTP) and sends each request to the
// (worker, rank) holding the longest prefix of its prompt, talking to the workers only through
// their vLLM OpenAI API (/tokenize for the prompt's token ids, X-data-parallel-rank to pin the rank).
//
//   kvcr-mock up --worker-api --state-file /tmp/stack.json
//   bun examples/prefix-router.ts --state-file /tmp/stack.json --port 8080
//   curl -s localhost:8080/v1/completions -H 'content-type: application/json' -d '{"model": "mock-model", "prompt": "…"}'
//
// Workers come from up's state file (each mocker's worker_api_urls and raw_endpoints), or one
// `--worker URL=tcp://HOST:PORT[,tcp://…]` per worker (one raw endpoint per data-parallel rank).
// `--policy random` routes at random instead: the baseline to compare prefix reuse against.
// Blocks are keyed by their token ids, chained from the parent, so the hashes any vLLM publishes
// work. An example: no replay of missed batches, no load awareness beyond breaking ties.
import { readFileSync } from "node:fs";
import { decodeBatch, type VllmKvEvent } from "../src/protocol/kv-events/index.ts";
import { SubSocket } from "../src/transport/zmtp/index.ts";

interface Target {
  /** The worker's OpenAI API base URL. */
  url: string;
  rank: number;
  /** Raw block hash (the worker's) → our key, for the device tier (what vLLM's prefix cache hits). */
  byRaw: Map<bigint, bigint>;
  keys: Set<bigint>;
  inFlight: number;
}

const ROOT = 0n;

/** Our key of a block: its tokens hashed with its parent's key, so equal prefixes give equal keys anywhere. */
function blockKey(parent: bigint, tokens: readonly number[]): bigint {
  return Bun.hash.xxHash3(new Uint32Array(tokens).buffer, parent);
}

/** Applies one raw event of a target's stream (device tier only). */
function apply(t: Target, e: VllmKvEvent, learnBlockSize: (n: number) => void): void {
  if (e.type === "AllBlocksCleared") {
    t.byRaw.clear();
    t.keys.clear();
    return;
  }
  if (e.medium !== null && e.medium !== "GPU") return;
  if (e.type === "BlockRemoved") {
    for (const raw of e.blockHashes) {
      const key = t.byRaw.get(raw);
      if (key === undefined) continue;
      t.byRaw.delete(raw);
      t.keys.delete(key);
    }
    return;
  }
  learnBlockSize(e.blockSize);
  let parent = e.parentBlockHash === null ? ROOT : t.byRaw.get(e.parentBlockHash);
  if (parent === undefined) return; // a parent we never saw (a missed batch): its chain cannot be keyed
  e.blockHashes.forEach((raw, i) => {
    const key = blockKey(parent!, e.tokenIds.slice(i * e.blockSize, (i + 1) * e.blockSize));
    t.byRaw.set(raw, key);
    t.keys.add(key);
    parent = key;
  });
}

/** The prompt's full blocks as keys. */
function promptKeys(tokens: readonly number[], blockSize: number): bigint[] {
  const keys: bigint[] = [];
  let parent = ROOT;
  for (let i = 0; i + blockSize <= tokens.length; i += blockSize) keys.push((parent = blockKey(parent, tokens.slice(i, i + blockSize))));
  return keys;
}

function matched(t: Target, keys: readonly bigint[]): number {
  let n = 0;
  while (n < keys.length && t.keys.has(keys[n]!)) n++;
  return n;
}

/** The longest cached prefix wins; ties go to the fewest requests in flight, then at random. */
function pick(targets: readonly Target[], keys: readonly bigint[], policy: string): Target {
  if (policy === "random") return targets[Math.floor(Math.random() * targets.length)]!;
  let best: Target[] = [];
  let bestScore = -Infinity;
  for (const t of targets) {
    const score = matched(t, keys) * 1e6 - t.inFlight;
    if (score > bestScore) [best, bestScore] = [[t], score];
    else if (score === bestScore) best.push(t);
  }
  return best[Math.floor(Math.random() * best.length)]!;
}

function parseArgs(argv: string[]): { workers: { url: string; raw: string[] }[]; port: number; host: string; policy: string } {
  const out = { workers: [] as { url: string; raw: string[] }[], port: 8080, host: "127.0.0.1", policy: "prefix" };
  for (let i = 0; i < argv.length; i++) {
    const [flag, value] = [argv[i]!, argv[i + 1]];
    if (value === undefined) throw new Error(`${flag}: needs a value`);
    i++;
    if (flag === "--port") out.port = Number(value);
    else if (flag === "--host") out.host = value;
    else if (flag === "--policy" && (value === "prefix" || value === "random")) out.policy = value;
    else if (flag === "--worker") {
      const [url, raw] = value.split("=");
      if (!url || !raw) throw new Error(`--worker: expected URL=tcp://HOST:PORT[,…], got ${value}`);
      out.workers.push({ url, raw: raw.split(",") });
    } else if (flag === "--state-file") {
      const state = JSON.parse(readFileSync(value, "utf8")) as { processes: { worker_api_urls?: string[]; raw_endpoints?: string[][] }[] };
      for (const p of state.processes) p.worker_api_urls?.forEach((url, w) => out.workers.push({ url, raw: p.raw_endpoints?.[w] ?? [] }));
    } else throw new Error(`unknown flag ${flag} (flags: --state-file FILE | --worker URL=EP[,EP…], --port, --host, --policy prefix|random)`);
  }
  if (out.workers.length === 0) throw new Error("no workers: give --state-file of `kvcr-mock up --worker-api`, or --worker URL=tcp://… per worker");
  return out;
}

const args = parseArgs(process.argv.slice(2));
let blockSize = 0;
const targets: Target[] = [];
const subs: SubSocket[] = [];
for (const w of args.workers) {
  w.raw.forEach((endpoint, rank) => {
    const t: Target = { url: w.url, rank, byRaw: new Map(), keys: new Set(), inFlight: 0 };
    targets.push(t);
    const sub = new SubSocket();
    sub.onMessage((frames) => {
      for (const e of decodeBatch(frames[2]!).events) apply(t, e, (n) => (blockSize = n));
    });
    sub.subscribe(""); // every topic: one stream per rank either way
    sub.connect(endpoint);
    subs.push(sub);
  });
}
await Promise.all(subs.map((s) => s.connected()));

/** The prompt's token ids, from the worker's own tokenizer (one tokenizer for routing and serving). */
async function tokensOf(body: Record<string, unknown>, chat: boolean): Promise<number[]> {
  if (!chat && Array.isArray(body.prompt) && body.prompt.every((x) => typeof x === "number")) return body.prompt as number[];
  const res = await fetch(`${targets[0]!.url}/tokenize`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(chat ? { model: body.model, messages: body.messages } : { model: body.model, prompt: body.prompt }) });
  return res.ok ? ((await res.json()) as { tokens: number[] }).tokens : [];
}

async function route(req: Request, path: string): Promise<Response> {
  const text = await req.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return Response.json({ error: { message: "body is not JSON", type: "invalid_request_error", param: "body", code: null } }, { status: 400 });
  }
  const tokens = await tokensOf(body, path === "/v1/chat/completions");
  const t = pick(targets, blockSize > 0 ? promptKeys(tokens, blockSize) : [], args.policy);
  t.inFlight++;
  const done = () => void t.inFlight--;
  let res: Response;
  try {
    res = await fetch(`${t.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-data-parallel-rank": String(t.rank) }, body: text });
  } catch (err) {
    done();
    return Response.json({ error: { message: `worker ${t.url} failed: ${(err as Error).message}`, type: "server_error", param: null, code: null } }, { status: 502 });
  }
  const headers = new Headers(res.headers);
  for (const h of ["content-length", "content-encoding", "transfer-encoding"]) headers.delete(h);
  if (!res.body) {
    done();
    return new Response(null, { status: res.status, headers });
  }
  // Streams pass through as they come; the request counts as in flight until its body ends.
  return new Response(res.body.pipeThrough(new TransformStream({ flush: done })), { status: res.status, headers });
}

const server = Bun.serve({
  hostname: args.host,
  port: args.port,
  fetch(req) {
    const path = new URL(req.url).pathname;
    if (req.method === "POST" && (path === "/v1/completions" || path === "/v1/chat/completions")) return route(req, path);
    if (path === "/v1/models") return fetch(`${targets[0]!.url}/v1/models`);
    if (path === "/health") return new Response(null, { status: 200 });
    return Response.json({ error: { message: `no route ${req.method} ${path}`, type: "invalid_request_error", param: null, code: "not_found" } }, { status: 404 });
  },
});
console.log(`prefix-router listening on http://${args.host}:${server.port} (${args.policy} routing over ${targets.length} worker rank(s))`);
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    void server.stop(true);
    for (const s of subs) s.close();
    process.exit(0);
  });
}
