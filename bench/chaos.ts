// The chaos bench (docs/PERFORMANCE.md, Reliability): a fresh `up` stack per case under a steady
// 20 req/s, one hostile peer or hang per case, and per case the requests failed, the attacked
// process's slowest /health, and when the frontend's index was exact again (precision and recall
// ≥ 0.99 against the mockers' truth, and staying so). Run: `npx bun bench/chaos.ts [case …]`
// (env BENCH_RATE req/s, BENCH_BIN = a compiled binary instead of `bun src/cli.ts`).
import { connect } from "node:net";
import { command, hostileSub, join } from "../test/hostile-zmtp.ts";
import { startStack, rssMiB, type ChaosStack } from "./lib/chaos-stack.ts";
import { driveLoad, recoveredAfter, watchHealth, watchIndex } from "./lib/chaos-watch.ts";
import { machineLine } from "./lib/machine.ts";
import { envNumber } from "./lib/measure.ts";

const RATE = envNumber("BENCH_RATE", 20);
const WARM_S = 3;
const AFTER_S = 8;
const te = new TextEncoder();

interface Case {
  /** Which process is attacked: its /health is watched. */
  target: (s: ChaosStack) => string;
  /** The attack; resolves when it is over (the hostile peer gone). Returns a note for the report. */
  attack: (s: ChaosStack) => Promise<string>;
  upArgs?: string[];
}

const mocker = (s: ChaosStack) => s.processes().find((p) => p.role === "mocker")!;
const rawEndpoint = (s: ChaosStack) => mocker(s).raw_endpoints![0]![0]!;

/** 100,000 SUBSCRIBEs then 1,500 CANCELs (1.3 MB) from one peer. */
async function manySubscriptions(endpoint: string): Promise<string> {
  using peer = await hostileSub(endpoint);
  peer.send(join([...Array.from({ length: 100_000 }, (_, i) => command("SUBSCRIBE", te.encode(`t${i}`))), ...Array.from({ length: 1_500 }, (_, i) => command("CANCEL", te.encode(`t${i}`)))]));
  const t0 = performance.now();
  while (!peer.isClosed() && performance.now() - t0 < 60_000) await Bun.sleep(20);
  return peer.isClosed() ? `peer dropped after ${(performance.now() - t0).toFixed(0)} ms` : "peer NOT dropped within 60 s";
}

/** Twenty peers each sending a whole 15 MiB SUBSCRIBE; the attacked process's RSS before and 10 s after. */
async function hugeSubscriptions(endpoint: string, pid: number): Promise<string> {
  const before = rssMiB(pid);
  const body = new Uint8Array(15 * 1024 * 1024);
  const frame = join([new Uint8Array([0x06, 0, 0, 0, 0, 0, 0xf0, 0, 10]), te.encode("SUBSCRIBE"), body.subarray(10)]);
  const peers = await Promise.all(Array.from({ length: 20 }, () => hostileSub(endpoint)));
  for (const p of peers) p.send(frame);
  const t0 = performance.now();
  while (peers.some((p) => !p.isClosed()) && performance.now() - t0 < 30_000) await Bun.sleep(20);
  const dropped = peers.filter((p) => p.isClosed()).length;
  for (const p of peers) p[Symbol.dispose]();
  const peak = rssMiB(pid);
  await Bun.sleep(10_000);
  return `${dropped}/20 peers dropped; RSS ${before.toFixed(0)} → ${peak.toFixed(0)} MiB at once, ${rssMiB(pid).toFixed(0)} MiB 10 s later`;
}

/** Raw bytes to an HTTP port; what came back before the server closed (or 3 s passed). */
function rawHttp(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    let out = "";
    const sock = connect(Number(port), hostname, () => sock.write(request));
    sock.on("data", (d) => (out += d.toString("latin1")));
    sock.on("close", () => resolve(out));
    sock.on("error", () => resolve(out));
    setTimeout(() => (sock.destroy(), resolve(out)), 3_000);
  });
}
const statuses = (reply: string) => [...reply.matchAll(/^HTTP\/1\.[01] (\d{3})/gm)].map((m) => m[1]).join(",") || "none";

const CASES: Record<string, Case> = {
  "mocker-subscriptions": { target: (s) => `${mocker(s).url}/health`, attack: (s) => manySubscriptions(rawEndpoint(s)) },
  "agent-subscriptions": { target: (s) => `${s.agentUrl}/live`, attack: async (s) => manySubscriptions((await s.agentEventsEndpoint())!) },
  "mocker-huge-subscriptions": { target: (s) => `${mocker(s).url}/health`, attack: (s) => hugeSubscriptions(rawEndpoint(s), mocker(s).pid) },
  "agent-huge-subscriptions": { target: (s) => `${s.agentUrl}/live`, attack: async (s) => hugeSubscriptions((await s.agentEventsEndpoint())!, s.processes().find((p) => p.role === "agent")!.pid) },
  "http10-no-host": {
    target: (s) => `${s.frontendUrl}/health`,
    attack: async (s) => {
      const replies = await Promise.all(s.processes().map(async (p) => `${p.name} ${statuses(await rawHttp(p.url, "GET /health HTTP/1.0\r\n\r\n"))}`));
      return `GET /health HTTP/1.0 without Host: ${replies.join(", ")}`;
    },
  },
  "pipelined-posts": {
    target: (s) => `${s.frontendUrl}/health`,
    attack: async (s) => {
      const body = JSON.stringify({ model: "mock-model", prompt: "hello there", max_tokens: 4 });
      const post = `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      const reply = await rawHttp(s.frontendUrl, post + post.replace("HTTP/1.1\r\n", "HTTP/1.1\r\nConnection: close\r\n"));
      return `two pipelined POSTs to the frontend: statuses ${statuses(reply)}`;
    },
  },
};

async function runCase(name: string, c: Case) {
  const stack = await startStack(["--mocker-processes", "1", "--workers-per-process", "2", ...(c.upArgs ?? [])]);
  try {
    const t0 = performance.now();
    const load = driveLoad(stack.frontendUrl, RATE);
    const health = watchHealth(c.target(stack));
    const index = watchIndex(stack.frontendUrl, () => stack.processes().filter((p) => p.role === "mocker").map((p) => p.url), t0);
    await Bun.sleep(WARM_S * 1000);
    const note = await c.attack(stack);
    const endS = (performance.now() - t0) / 1000;
    await Bun.sleep(AFTER_S * 1000);
    const [l, h] = await Promise.all([load.stop(), health.stop(), index.stop()]);
    const recovery = recoveredAfter(index.samples, endS);
    const late = index.samples.filter((x) => x.t_s >= endS + 5);
    const worstLate = late.length === 0 ? "n/a" : `${Math.min(...late.map((x) => x.precision)).toFixed(3)}/${Math.min(...late.map((x) => x.recall)).toFixed(3)}`;
    console.log(`${name}: ${l.failed}/${l.sent} requests failed; /health max ${h.maxMs.toFixed(0)} ms (${h.overOneSecond} over 1 s, ${h.failed} failed); index exact ${recovery === null ? "NEVER" : `${recovery.toFixed(2)} s`} after the attack, worst precision/recall from 5 s on ${worstLate}; ${note}`);
    if (l.failed > 0) console.log(`  errors: ${JSON.stringify(l.errors)}`);
  } finally {
    await stack.stop();
  }
}

const chosen = process.argv.slice(2);
for (const name of chosen) if (!(name in CASES)) throw new Error(`unknown case ${name}; cases: ${Object.keys(CASES).join(", ")}`);
console.log(`chaos bench: ${RATE} req/s, ${WARM_S} s warm-up, ${AFTER_S} s after each attack; 1 agent + 1 mocker × 2 workers + frontend per case`);
for (const name of chosen.length > 0 ? chosen : Object.keys(CASES)) await runCase(name, CASES[name]!);
console.log(machineLine());
