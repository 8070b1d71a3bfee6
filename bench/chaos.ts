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
import { startEtcdCluster, type EtcdCluster } from "../test/etcd-cluster.ts";
import { envNumber } from "./lib/measure.ts";

const RATE = envNumber("BENCH_RATE", 20);
const WARM_S = 3;
const AFTER_S = 8;
const te = new TextEncoder();

interface Case {
  /** Which process is attacked: its /health is watched. */
  target: (s: ChaosStack) => string;
  /**
   * The attack; resolves when it is over (the hostile peer gone, the hung process replaced) with a
   * note for the report and, for a hang, when it began (recovery counts from there, else from the end).
   */
  attack: (s: ChaosStack, nowS: () => number) => Promise<{ note: string; fromS?: number }>;
  /** up's flags (default: ONE_MOCKER). */
  upArgs?: string[];
  /** Something the stack needs started first (etcd): its extra flags, stopped after the case. */
  setup?: () => Promise<{ args: string[] } & AsyncDisposable>;
}

const ONE_MOCKER = ["--mocker-processes", "1", "--workers-per-process", "2"];

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
// Each status line, also one that follows the previous answer's body on the same line.
const statuses = (reply: string) => [...reply.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => m[1]).join(",") || "none";

/**
 * SIGSTOP one child of the stack and wait until up has replaced it (a new pid in the state file):
 * when up said so (its liveness line) and when the replacement was ready, from the stop.
 */
async function stopChild(s: ChaosStack, nowS: () => number, name: string): Promise<{ note: string; fromS: number }> {
  const victim = s.processes().find((p) => p.name === name)!;
  const logged = s.log.length;
  process.kill(victim.pid, "SIGSTOP");
  const fromS = nowS();
  let saidS: number | undefined;
  try {
    while (nowS() - fromS < 60) {
      if (saidS === undefined && s.log.slice(logged).some((l) => l.includes(`${name} (pid ${victim.pid}) has not answered`))) saidS = nowS() - fromS;
      const now = s.processes().find((p) => p.name === name)!;
      if (now.pid !== victim.pid && s.log.slice(logged).some((l) => l.includes(`${name} restarted`))) {
        return { note: `${name} SIGSTOPped: up reported it after ${saidS?.toFixed(1) ?? "?"} s, restarted and ready ${(nowS() - fromS).toFixed(1)} s after the stop`, fromS };
      }
      await Bun.sleep(100);
    }
    return { note: `${name} SIGSTOPped: NOT replaced within 60 s`, fromS };
  } finally {
    try {
      process.kill(victim.pid, "SIGKILL"); // never leave a stopped process behind
    } catch {}
  }
}

/** What docs/up.md ("Surviving hangs") recommends, so a hung worker costs no request. */
const SURVIVE_HANGS = ["--migration-limit", "2", "--worker-stall-timeout", "2", "--liveness-timeout", "5"];

/**
 * The first etcd member (the one every process talks to) hangs; meanwhile mocker-0 crashes and up
 * restarts it, so its new endpoints reach etcd through the other members only. The member resumes
 * 12 s later (its late events must not eject a live worker). Reports when the frontend's /health
 * said its discovery was degraded, when mocker-0 was back, and when /health said healthy again.
 */
async function hangEtcdMember(s: ChaosStack, nowS: () => number, cluster: EtcdCluster): Promise<{ note: string; fromS: number }> {
  const member = cluster.members[0]!;
  member.pause();
  const fromS = nowS();
  try {
    const m0 = s.processes().find((p) => p.name === "mocker-0")!;
    process.kill(m0.pid, "SIGKILL");
    let degradedS: number | undefined;
    let readyS: number | undefined;
    const restartedAt = (pid: number) => readyS ?? (s.processes().find((p) => p.name === "mocker-0")!.pid !== pid ? (readyS = nowS() - fromS) : undefined);
    while (nowS() - fromS < 12) {
      restartedAt(m0.pid);
      if (degradedS === undefined) {
        const health = (await (await fetch(`${s.frontendUrl}/health`)).json().catch(() => ({}))) as { status?: string; discovery?: { degraded?: boolean } };
        if (health.status === "degraded" && health.discovery?.degraded === true) degradedS = nowS() - fromS;
      }
      await Bun.sleep(100);
    }
    member.resume();
    const resumedS = nowS() - fromS;
    let healthyS: number | undefined;
    while (healthyS === undefined && nowS() - fromS < 40) {
      const health = (await (await fetch(`${s.frontendUrl}/health`)).json().catch(() => ({}))) as { status?: string };
      if (health.status === "healthy") healthyS = nowS() - fromS;
      else await Bun.sleep(100);
    }
    const restartedS = restartedAt(m0.pid);
    return {
      note: `etcd member 1 of 3 SIGSTOPped and mocker-0 killed: frontend /health degraded for discovery after ${degradedS?.toFixed(1) ?? "NEVER"} s; mocker-0 restarted and ready ${restartedS === undefined ? "NEVER" : `after ${restartedS.toFixed(1)} s`}; member resumed at ${resumedS.toFixed(1)} s, /health healthy again at ${healthyS?.toFixed(1) ?? "NEVER"} s`,
      fromS,
    };
  } finally {
    if (member.paused) member.resume();
  }
}

const note = (text: string) => ({ note: text });
const CASES: Record<string, Case> = {
  "mocker-subscriptions": { target: (s) => `${mocker(s).url}/health`, attack: async (s) => note(await manySubscriptions(rawEndpoint(s))) },
  "agent-subscriptions": { target: (s) => `${s.agentUrl}/live`, attack: async (s) => note(await manySubscriptions((await s.agentEventsEndpoint())!)) },
  "mocker-huge-subscriptions": { target: (s) => `${mocker(s).url}/health`, attack: async (s) => note(await hugeSubscriptions(rawEndpoint(s), mocker(s).pid)) },
  "agent-huge-subscriptions": { target: (s) => `${s.agentUrl}/live`, attack: async (s) => note(await hugeSubscriptions((await s.agentEventsEndpoint())!, s.processes().find((p) => p.role === "agent")!.pid)) },
  "http10-no-host": {
    target: (s) => `${s.frontendUrl}/health`,
    attack: async (s) => {
      const replies = await Promise.all(s.processes().map(async (p) => `${p.name} ${statuses(await rawHttp(p.url, "GET /health HTTP/1.0\r\n\r\n"))}`));
      return note(`GET /health HTTP/1.0 without Host: ${replies.join(", ")}`);
    },
  },
  "pipelined-posts": {
    target: (s) => `${s.frontendUrl}/health`,
    attack: async (s) => {
      const body = JSON.stringify({ model: "mock-model", prompt: "hello there", max_tokens: 4 });
      const post = `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      const reply = await rawHttp(s.frontendUrl, post + post.replace("HTTP/1.1\r\n", "HTTP/1.1\r\nConnection: close\r\n"));
      return note(`two pipelined POSTs to the frontend: statuses ${statuses(reply)}`);
    },
  },
  "agent-stopped": { target: (s) => `${s.frontendUrl}/health`, attack: (s, nowS) => stopChild(s, nowS, "agent"), upArgs: [...ONE_MOCKER, ...SURVIVE_HANGS] },
  "etcd-member-hung": {
    target: (s) => `${s.frontendUrl}/health`,
    attack: (s, nowS) => hangEtcdMember(s, nowS, etcdCluster!),
    upArgs: ["--mocker-processes", "2", "--workers-per-process", "1", ...SURVIVE_HANGS],
    setup: async () => {
      etcdCluster = await startEtcdCluster();
      const cluster = etcdCluster;
      return { args: ["--discovery-backend", "etcd", "--etcd-endpoints", cluster.endpoints.join(","), "--namespace", `chaos-${process.pid}`], [Symbol.asyncDispose]: () => cluster[Symbol.asyncDispose]() };
    },
  },
  "mocker-stopped": {
    target: (s) => `${s.frontendUrl}/health`,
    attack: (s, nowS) => stopChild(s, nowS, "mocker-0"),
    upArgs: ["--mocker-processes", "2", "--workers-per-process", "1", ...SURVIVE_HANGS],
  },
};

let etcdCluster: EtcdCluster | undefined;

async function runCase(name: string, c: Case) {
  await using extra = c.setup ? await c.setup() : undefined;
  const stack = await startStack([...(c.upArgs ?? ONE_MOCKER), ...(extra?.args ?? [])]);
  try {
    const t0 = performance.now();
    const load = driveLoad(stack.frontendUrl, RATE);
    const health = watchHealth(c.target(stack));
    const index = watchIndex(stack.frontendUrl, () => stack.processes().filter((p) => p.role === "mocker").map((p) => p.url), t0);
    await Bun.sleep(WARM_S * 1000);
    const nowS = () => (performance.now() - t0) / 1000;
    const { note, fromS } = await c.attack(stack, nowS);
    const endS = nowS();
    await Bun.sleep(AFTER_S * 1000);
    const [l, h] = await Promise.all([load.stop(), health.stop(), index.stop()]);
    const recovery = recoveredAfter(index.samples, fromS ?? endS);
    const late = index.samples.filter((x) => x.t_s >= endS + 5);
    const worstLate = late.length === 0 ? "n/a" : `${Math.min(...late.map((x) => x.precision)).toFixed(3)}/${Math.min(...late.map((x) => x.recall)).toFixed(3)}`;
    console.log(`${name}: ${l.failed}/${l.sent} requests failed; /health max ${h.maxMs.toFixed(0)} ms (${h.overOneSecond} over 1 s, ${h.failed} failed); index exact ${recovery === null ? "NEVER" : `${recovery.toFixed(2)} s`} after the ${fromS === undefined ? "attack" : "stop"}, worst precision/recall from 5 s on ${worstLate}; ${note}`);
    if (l.failed > 0) console.log(`  errors: ${JSON.stringify(l.errors)}`);
    if (process.env.BENCH_VERBOSE) console.log(stack.log.filter((line) => /WARN|ERROR|restart|member|etcd/i.test(line)).map((line) => `  | ${line}`).join("\n"));
  } finally {
    await stack.stop();
  }
}

const chosen = process.argv.slice(2);
for (const name of chosen) if (!(name in CASES)) throw new Error(`unknown case ${name}; cases: ${Object.keys(CASES).join(", ")}`);
console.log(`chaos bench: ${RATE} req/s, ${WARM_S} s warm-up, ${AFTER_S} s after each attack; a fresh stack per case (1 agent + 1 mocker × 2 workers + frontend unless the case says)`);
for (const name of chosen.length > 0 ? chosen : Object.keys(CASES)) await runCase(name, CASES[name]!);
console.log(machineLine());
