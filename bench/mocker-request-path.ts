// The mocker's request path in one process, without the kernel: /v1/generate requests (64-token
// prompts over 8 shared prefixes, 1 output token, speedup 0, 4 workers) fed as bytes to the HTTP
// server's connections (the real parser, ServerRequest, app, engines, KV events and response
// writer) over sockets that only count what is written, 32 connections in turn. Prints the
// process's CPU µs per request (collector threads included): the JavaScript and the collector's
// cost of a request, without the send/recv and scheduling that make the live figures
// (bench/frontend-throughput.ts) swing by tens of percent on a shared machine. Median of 5 rounds
// after a warm-up. Run: bun bench/mocker-request-path.ts
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config/load.ts";
import { mockerOptions, type MockerConfig } from "../src/config/mocker.ts";
import { createLogger } from "../src/lib/logger.ts";
import { DEFAULT_REQUEST_LIMITS } from "../src/protocol/http1-request.ts";
import { createMockerFetch } from "../src/roles/mocker/http-app.ts";
import { startMocker } from "../src/roles/mocker/index.ts";
import { appFailed } from "../src/transport/http/server-answers.ts";
import { type ConnectionServer, ServerConnection } from "../src/transport/http/server-connection.ts";
import { figure } from "./lib/figures.ts";
import { machineLine } from "./lib/machine.ts";

const WORKERS = 4;
const CONNECTIONS = 32;
const ROUNDS = 5;
const PER_ROUND = 40_000;

const dir = await mkdtemp(join(tmpdir(), "kvcr-bench-path-"));
const { config } = loadConfig(mockerOptions, { argv: ["--num-workers", String(WORKERS), "--speedup-ratio", "0", "--block-size", "16", "--discovery-dir", dir] });
const mocker = await startMocker(config as MockerConfig, { logger: createLogger({ level: "warn", tag: "bench" }), env: {} });
try {
  await mocker.ready;
  const app = createMockerFetch(mocker.pool, { maxPromptTokens: 100_000, maxOutputTokens: 100_000 });
  const encoder = new TextEncoder();
  const prompt = (i: number) => [...Array.from({ length: 48 }, (_, k) => 1000 * ((i % 8) + 1) + k), ...Array.from({ length: 16 }, (_, k) => 100_000 + ((i * 16 + k) % 1_000_000))];
  const requests = Array.from({ length: 4096 }, (_, i) => {
    const body = JSON.stringify({ worker: i % WORKERS, dp_rank: 0, token_ids: prompt(i), max_tokens: 1 });
    return encoder.encode(`POST /v1/generate HTTP/1.1\r\nhost: 127.0.0.1:8000\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
  const server: ConnectionServer = {
    fetch: app,
    limits: DEFAULT_REQUEST_LIMITS,
    ownHost: "127.0.0.1:8000",
    stopping: false,
    date: () => "Mon, 07 Dec 2026 00:00:00 GMT",
    failed: appFailed,
    fault: (err) => {
      throw err;
    },
    forget: () => {},
  };
  const answered: ((bytes: Uint8Array) => void)[] = [];
  const connections = Array.from({ length: CONNECTIONS }, (_, c) => {
    const socket = { write: (b: Uint8Array) => (answered[c]?.(b), b.length), pause() {}, resume() {}, end() {}, terminate() {}, setNoDelay() {} };
    return new ServerConnection(socket as never, server);
  });
  let next = 0;
  const lane = async (c: number, until: number) => {
    while (next < until) {
      const i = next++;
      const written = new Promise<Uint8Array>((resolve) => (answered[c] = resolve));
      connections[c]!.onData(requests[i % requests.length]!);
      const bytes = await written;
      if (bytes[9] !== 0x32) throw new Error(`request ${i} answered ${Buffer.from(bytes.subarray(0, 40)).toString("latin1")}`);
    }
  };
  const round = async (count: number) => {
    const until = next + count;
    const cpu0 = process.cpuUsage();
    await Promise.all(connections.map((_, c) => lane(c, until)));
    const cpu = process.cpuUsage(cpu0);
    return (cpu.user + cpu.system) / count;
  };
  await round(PER_ROUND); // warm-up: the JIT settles
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) rounds.push(await round(PER_ROUND));
  const median = [...rounds].sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
  console.log(`mocker request path in-process (${WORKERS} workers, speedup 0, ${CONNECTIONS} connections): ${median.toFixed(2)} µs CPU per request (rounds ${rounds.map((r) => r.toFixed(2)).join(", ")})`);
  figure("mocker request path CPU per request", median, "µs", "lower");
  console.log(machineLine());
} finally {
  await mocker.close();
  await rm(dir, { recursive: true, force: true });
}
