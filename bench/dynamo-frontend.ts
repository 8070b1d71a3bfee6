// Dynamo's own frontend (--router-mode kv) over kvcr-mock's `mocker --runtime dynamo` against the
// same frontend over Dynamo's own mocker (`python -m dynamo.mocker`), same settings (4 workers,
// block 16, speedup 0, file discovery) and workload (shared-prefix chat, 32 in flight), fresh
// processes per round, the sides alternated: routed requests/s and mocker CPU per streamed token,
// each as a ratio kvcr-mock / Dynamo. Then 1,024 workers in one process: seconds from start until
// the frontend lists them all and routes a request, for both mockers.
// Run: `npx bun bench/dynamo-frontend.ts` (needs the peers environment; ~3 min; env BENCH_ROUNDS,
// BENCH_DURATION_MS, BENCH_CONCURRENCY, BENCH_SCALE_WORKERS adjust it).
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { findPeersPython, PEERS_HINT, writeModelFiles } from "../scripts/lib/peers.ts";
import { pickFreePorts } from "../src/transport/port-hold.ts";
import { machineLine } from "./lib/machine.ts";
import { envNumber } from "./lib/measure.ts";
import { median } from "./lib/router-scenarios.ts";

const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const DURATION_MS = envNumber("BENCH_DURATION_MS", 8000);
const CONCURRENCY = envNumber("BENCH_CONCURRENCY", 32);
const SCALE_WORKERS = envNumber("BENCH_SCALE_WORKERS", 1024);
const MAX_TOKENS = 32;
const CLI = resolve(import.meta.dir, "../src/cli.ts");
const python = findPeersPython();
if (!python) {
  console.error(`no peers environment: ${PEERS_HINT}`);
  process.exit(1);
}
const scratch = mkdtempSync(join(tmpdir(), "kvcr-bench-dyn-"));
const model = join(scratch, "model");
await writeModelFiles(model);

type Side = "kvcr-mock" | "dynamo";
const children = new Set<Bun.Subprocess>();
const stopAll = () => {
  for (const c of children) c.kill("SIGKILL");
};
process.on("exit", stopAll);

function env(kv: string): Record<string, string> {
  return { ...(process.env as Record<string, string>), HF_HUB_OFFLINE: "1", TRANSFORMERS_OFFLINE: "1", DYN_LOG: "error", DYN_DISCOVERY_BACKEND: "file", DYN_FILE_KV: kv,
    DYN_TCP_RPC_HOST: "127.0.0.1", DYN_EVENT_PLANE_HOST: "127.0.0.1", DYN_TCP_RESPONSE_STREAM_HOST: "127.0.0.1", NO_COLOR: "1",
    // Dynamo's Python roles write a logging config into the temp dir at every start: keep them in ours.
    TMPDIR: scratch };
}

function spawn(argv: string[], kv: string): Bun.Subprocess {
  const child = Bun.spawn(argv, { env: env(kv), stdout: "ignore", stderr: "ignore" });
  children.add(child);
  return child;
}

function mockerArgv(side: Side, workers: number): string[] {
  const common = ["--model-path", model, "--model-name", "mock-model", "--num-workers", String(workers), "--block-size", "16", "--speedup-ratio", "0", "--discovery-backend", "file"];
  return side === "kvcr-mock"
    ? [process.execPath, CLI, "mocker", "--runtime", "dynamo", ...common, "--log-level", "warn"]
    : [python!, "-m", "dynamo.mocker", ...common, "--request-plane", "tcp", "--event-plane", "zmq"];
}

/** utime + stime of a process, in seconds (Linux /proc). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await Bun.sleep(100);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

async function startStack(side: Side, workers: number, readyTimeoutMs = 60_000) {
  const kv = mkdtempSync(join(scratch, "kv-"));
  const t0 = performance.now();
  const mocker = spawn(mockerArgv(side, workers), kv);
  const [port] = pickFreePorts("127.0.0.1", 1);
  const frontend = spawn([python!, "-m", "dynamo.frontend", "--http-host", "127.0.0.1", "--http-port", String(port), "--router-mode", "kv", "--discovery-backend", "file",
    "--request-plane", "tcp", "--event-plane", "zmq"], kv);
  const base = `http://127.0.0.1:${port}`;
  await until(`${side}: ${workers} workers listed`, async () => {
    const health = (await (await fetch(`${base}/health`)).json()) as { instances?: { endpoint: string }[] };
    // The instances come before the model card: the chat route 404s until the model is listed.
    const models = (await (await fetch(`${base}/v1/models`)).json()) as { data?: { id: string }[] };
    return (health.instances ?? []).filter((i) => i.endpoint === "generate").length >= workers && (models.data ?? []).some((m) => m.id === "mock-model");
  }, readyTimeoutMs).catch(async (err: unknown) => {
    for (const c of [frontend, mocker]) c.kill("SIGKILL");
    throw err;
  });
  await chat(base, "warm-up");
  const readyS = (performance.now() - t0) / 1000;
  return {
    base,
    mocker,
    readyS,
    async stop() {
      for (const c of [frontend, mocker]) {
        c.kill("SIGTERM");
        await Promise.race([c.exited, Bun.sleep(5000)]);
        c.kill("SIGKILL");
        children.delete(c);
      }
      rmSync(kv, { recursive: true, force: true });
    },
  };
}

async function chat(base: string, content: string): Promise<number> {
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "mock-model", messages: [{ role: "user", content }], max_tokens: MAX_TOKENS, stream: true, stream_options: { include_usage: true } }),
  });
  if (!r.ok) throw new Error(`chat answered ${r.status}: ${await r.text()}`);
  const text = await r.text();
  const usage = text.split("\n").filter((l) => l.includes('"usage"')).pop();
  return usage ? (JSON.parse(usage.slice(6)).usage.completion_tokens as number) : 0;
}

/** Shared-prefix chat: 16 prefixes of ~1,000 bytes, a fresh suffix per request. */
async function drive(base: string): Promise<{ reqPerS: number; tokens: number; seconds: number }> {
  const prefixes = Array.from({ length: 16 }, (_, i) => `Prefix ${i}. ${"lorem ipsum dolor sit amet ".repeat(36)}`);
  let requests = 0;
  let tokens = 0;
  let n = 0;
  const t0 = performance.now();
  const end = t0 + DURATION_MS;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < end) {
      const i = n++;
      tokens += await chat(base, `${prefixes[i % prefixes.length]} question ${i}`);
      requests++;
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  return { reqPerS: requests / seconds, tokens, seconds };
}

const SCALE_TIMEOUT_MS = 120_000;
const results: Record<Side, { reqPerS: number[]; cpuPerTokenUs: number[]; readyS: (number | undefined)[] }> = {
  "kvcr-mock": { reqPerS: [], cpuPerTokenUs: [], readyS: [] },
  dynamo: { reqPerS: [], cpuPerTokenUs: [], readyS: [] },
};
try {
  for (let round = 0; round < ROUNDS; round++) {
    const order: Side[] = round % 2 === 0 ? ["kvcr-mock", "dynamo"] : ["dynamo", "kvcr-mock"];
    for (const side of order) {
      const stack = await startStack(side, 4);
      const cpu0 = cpuSeconds(stack.mocker.pid);
      const load = await drive(stack.base);
      const cpu = cpuSeconds(stack.mocker.pid) - cpu0;
      results[side].reqPerS.push(load.reqPerS);
      results[side].cpuPerTokenUs.push((cpu / load.tokens) * 1e6);
      await stack.stop();
      console.error(`round ${round + 1} ${side}: ${load.reqPerS.toFixed(0)} req/s, ${((cpu / load.tokens) * 1e6).toFixed(1)} µs mocker CPU per token`);
    }
  }
  for (const side of ["kvcr-mock", "dynamo"] as Side[]) {
    try {
      const stack = await startStack(side, SCALE_WORKERS, SCALE_TIMEOUT_MS);
      results[side].readyS.push(stack.readyS);
      await stack.stop();
      console.error(`${side}: ${SCALE_WORKERS} workers listed and routed in ${stack.readyS.toFixed(1)} s`);
    } catch (err) {
      results[side].readyS.push(undefined);
      console.error(`${side}: ${(err as Error).message}`);
    }
  }
} finally {
  stopAll();
  rmSync(scratch, { recursive: true, force: true });
}

const row = (label: string, k: Side, pick: (r: (typeof results)[Side]) => number[], digits: number) => {
  const xs = pick(results[k]);
  return `${label}: median ${median(xs).toFixed(digits)} (runs ${xs.map((x) => x.toFixed(digits)).join(", ")})`;
};
console.log(`Dynamo's frontend (--router-mode kv), 4 workers, ${CONCURRENCY} chat streams in flight, ${MAX_TOKENS} tokens each, ${ROUNDS} alternated rounds of ${DURATION_MS / 1000} s`);
for (const side of ["kvcr-mock", "dynamo"] as Side[]) {
  console.log(`  over ${side === "dynamo" ? "Dynamo's mocker" : "kvcr-mock's mocker"}: ${row("routed req/s", side, (r) => r.reqPerS, 0)}; ${row("mocker CPU per streamed token µs", side, (r) => r.cpuPerTokenUs, 1)}`);
}
const ratio = (pick: (r: (typeof results)[Side]) => number[]) => median(pick(results["kvcr-mock"])) / median(pick(results.dynamo));
console.log(`  ratio kvcr-mock / Dynamo: routed req/s ${ratio((r) => r.reqPerS).toFixed(2)}×, mocker CPU per token ${ratio((r) => r.cpuPerTokenUs).toFixed(2)}×`);
const ready = (side: Side) => results[side].readyS[0]?.toFixed(1).concat(" s") ?? `not within ${SCALE_TIMEOUT_MS / 1000} s`;
console.log(`${SCALE_WORKERS} workers in one process, start to all listed and one request routed: kvcr-mock ${ready("kvcr-mock")}, Dynamo's mocker ${ready("dynamo")}`);
console.log(machineLine());
if (existsSync(scratch)) rmSync(scratch, { recursive: true, force: true });
