// Frontend throughput and added latency (targets ≥ 20,000 req/s and ≤ 1 ms added p99), all on this machine:
//   1. routed non-streaming requests/s through one `kvcr-mock frontend` process (kv router, index
//      fed by the workers' relays) to fast mock workers (speedup 0, 1 output token), against the
//      peers measured in the same run: a plain Bun.serve proxy doing the same proxying with no
//      routing (bench/lib/plain-proxy.ts), once over fetch (what a plain Bun proxy does) and once
//      over the frontend's own keep-alive client (the same transport, no routing: the floor).
//      Closed loop, 64 in flight, rounds interleaved.
//   2. added p99 at 1,000 req/s (open loop, 5 s rounds): through the frontend vs calling a worker's
//      /v1/generate directly with the same prompts; the keep-alive proxy in the same rounds shows
//      what a Bun.serve hop over the same client adds with no routing.
// Load comes from a separate client process (bench/lib/http-load.ts); every figure is the median
// of 3 rounds. The mocker, the frontend (or proxy) and the client share the machine's 2 cores.
// Run: bun bench/frontend-throughput.ts (env BENCH_SKIP_P99=1: the throughput part only)
import { readFile } from "node:fs/promises";
import { runHttpLoad, type HttpLoadReport } from "./lib/http-load.ts";
import { MockerChild } from "./lib/mocker-child.ts";
import { figure } from "./lib/figures.ts";
import { machineLine } from "./lib/machine.ts";

const CLI = new URL("../src/cli.ts", import.meta.url).pathname;
const PROXY = new URL("./lib/plain-proxy.ts", import.meta.url).pathname;
const WORKERS = 4;
const ROUNDS = 3;
const MODEL = "mocker-engine";

async function firstLine(stream: ReadableStream<Uint8Array>, match: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = performance.now() + timeoutMs;
  try {
    while (performance.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      const m = match.exec(text);
      if (m) return m;
    }
  } finally {
    reader.releaseLock();
  }
  throw new Error(`no line matching ${match} within ${timeoutMs} ms; got:\n${text}`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** CPU seconds (user + system) a process has used: on a shared machine, CPU per request is the steadier figure. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Round extends HttpLoadReport {
  /** CPU µs the proxying process spent per completed request in the round (warm-up included in CPU, so an upper bound). */
  cpuUsPerRequest: number;
  /** The same for the mocker serving the workers. */
  mockerCpuUsPerRequest: number;
}

await using mocker = await MockerChild.spawn(["--num-workers", String(WORKERS), "--speedup-ratio", "0", "--block-size", "16"]);
await mocker.waitHealthy(30_000);

const frontend = Bun.spawn(
  [process.execPath, CLI, "frontend", "--http-port", "0", "--namespace", "bench", "--discovery-dir", mocker.discoveryDir, "--router-mode", "kv", "--log-level", "info", "--log-format", "json"],
  { stdin: "ignore", stdout: "ignore", stderr: "pipe" },
);
const proxy = Bun.spawn([process.execPath, PROXY, mocker.httpUrl, String(WORKERS), "fetch"], { stdin: "ignore", stdout: "pipe", stderr: "inherit" });
const kaProxy = Bun.spawn([process.execPath, PROXY, mocker.httpUrl, String(WORKERS), "keepalive"], { stdin: "ignore", stdout: "pipe", stderr: "inherit" });
try {
  const feUrl = (await firstLine(frontend.stderr, /OpenAI-compatible API on (http:\/\/[0-9.:]+)/, 15_000))[1]!;
  const proxyUrl = (await firstLine(proxy.stdout, /(http:\/\/[0-9.:]+)/, 15_000))[1]!;
  const kaProxyUrl = (await firstLine(kaProxy.stdout, /(http:\/\/[0-9.:]+)/, 15_000))[1]!;
  for (;;) {
    const h = (await (await fetch(`${feUrl}/health`)).json()) as { instances: number };
    if (h.instances === WORKERS) break;
    await Bun.sleep(20);
  }
  console.log(`mocker ${WORKERS} workers (speedup 0, block 16) at ${mocker.httpUrl}; frontend ${feUrl} (kv); plain proxies ${proxyUrl} (fetch), ${kaProxyUrl} (keep-alive client)`);

  const closed = async (url: string, pid: number): Promise<Round> => {
    const [cpu0, mocker0] = [await cpuSeconds(pid), await cpuSeconds(mocker.pid)];
    const r = await runHttpLoad({ url, body: "completion", model: MODEL, mode: { kind: "closed", concurrency: 64 }, durationMs: 3000, warmupMs: 500 });
    const [cpu, mockerCpu] = [(await cpuSeconds(pid)) - cpu0, (await cpuSeconds(mocker.pid)) - mocker0];
    const per = (s: number) => (s * 1e6) / Math.max(1, r.completed);
    return { ...r, cpuUsPerRequest: per(cpu), mockerCpuUsPerRequest: per(mockerCpu) };
  };
  const fe: Round[] = [];
  const px: Round[] = [];
  const ka: Round[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    fe.push(await closed(`${feUrl}/v1/completions`, frontend.pid));
    px.push(await closed(`${proxyUrl}/v1/completions`, proxy.pid));
    ka.push(await closed(`${kaProxyUrl}/v1/completions`, kaProxy.pid));
  }
  for (const [name, rs] of [["frontend (kv routing)", fe], ["plain proxy over fetch", px], ["plain proxy, keep-alive", ka]] as const) {
    const failed = rs.reduce((n, r) => n + r.failed, 0);
    const cpu = median(rs.map((r) => r.cpuUsPerRequest));
    console.log(
      `${name.padEnd(24)} ${median(rs.map((r) => r.requestsPerS)).toFixed(0)} req/s (rounds: ${rs.map((r) => r.requestsPerS.toFixed(0)).join(", ")}; failed ${failed}${failed ? `, first: ${rs.find((r) => r.firstError)?.firstError}` : ""}); ` +
        `its own CPU ${cpu.toFixed(0)} µs per request → ≈ ${(1e6 / cpu).toFixed(0)} req/s per core it had alone ` +
        `(mocker ${median(rs.map((r) => r.mockerCpuUsPerRequest)).toFixed(0)} µs, load client ${median(rs.map((r) => r.clientCpuUsPerRequest)).toFixed(0)} µs per request)`,
    );
  }
  figure("frontend routed req/s", median(fe.map((r) => r.requestsPerS)), "req/s", "higher");
  figure("frontend CPU per request", median(fe.map((r) => r.cpuUsPerRequest)), "µs", "lower");
  figure("mocker CPU per request", median(fe.map((r) => r.mockerCpuUsPerRequest)), "µs", "lower");
  for (const [name, peer] of [["plain proxy over fetch", px], ["plain proxy, keep-alive", ka]] as const) {
    const byRate = median(fe.map((r) => r.requestsPerS)) / median(peer.map((r) => r.requestsPerS));
    const byCpu = median(peer.map((r) => r.cpuUsPerRequest)) / median(fe.map((r) => r.cpuUsPerRequest));
    console.log(`frontend / ${name}: ${byRate.toFixed(2)} by req/s, ${byCpu.toFixed(2)} by CPU per request`);
    figure(`frontend / ${name} by req/s`, byRate, "ratio", "higher");
  }

  if (process.env.BENCH_SKIP_P99 !== "1") {
    // 5 s rounds: a p99 over 5,000 requests, so one pause of a few ms moves it less.
    const open = (url: string, body: "completion" | "generate"): Promise<HttpLoadReport> =>
      runHttpLoad({ url, body, model: MODEL, workers: WORKERS, mode: { kind: "open", ratePerS: 1000 }, durationMs: 5000, warmupMs: 500 });
    const viaFe: HttpLoadReport[] = [];
    const viaKa: HttpLoadReport[] = [];
    const direct: HttpLoadReport[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      viaFe.push(await open(`${feUrl}/v1/completions`, "completion"));
      viaKa.push(await open(`${kaProxyUrl}/v1/completions`, "completion"));
      direct.push(await open(`${mocker.httpUrl}/v1/generate`, "generate"));
    }
    const p99Direct = median(direct.map((r) => r.p99Ms));
    const line = (name: string, rs: HttpLoadReport[]) =>
      console.log(`1,000 req/s ${name.padEnd(26)} p50 ${median(rs.map((r) => r.p50Ms)).toFixed(2)} ms, p99 ${median(rs.map((r) => r.p99Ms)).toFixed(2)} ms (rounds ${rs.map((r) => r.p99Ms.toFixed(2)).join(", ")}; completed ${rs.map((r) => r.completed).join(", ")})`);
    line("through the frontend:", viaFe);
    line("through the keep-alive proxy:", viaKa);
    line("direct to a worker:", direct);
    figure("frontend added p99 at 1,000 req/s", median(viaFe.map((r) => r.p99Ms)) - p99Direct, "ms", "lower");
    console.log(`added p99: frontend ${(median(viaFe.map((r) => r.p99Ms)) - p99Direct).toFixed(2)} ms, keep-alive proxy (no routing) ${(median(viaKa.map((r) => r.p99Ms)) - p99Direct).toFixed(2)} ms`);
  }
  console.log(machineLine("the mocker, the frontend/proxy and the client share them"));
} finally {
  for (const p of [frontend, proxy, kaProxy]) p.kill("SIGTERM");
  await Promise.all([frontend.exited, proxy.exited, kaProxy.exited]);
}
