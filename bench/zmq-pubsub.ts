// PUB→SUB throughput between two processes for a 1-block and a 32-block vLLM KV-event batch, with
// msgpack encode (publisher) and decode (subscriber) through src/protocol/kv-events included; the
// same workload through libzmq (zeromq.js under Node, msgpackr) in the same run as the reference;
// then a subscriber that stops reading (SIGSTOP): the publisher's rate and memory stay bounded.
//   npx bun bench/zmq-pubsub.ts [--duration-ms 2000] [--no-libzmq] [--no-slow] [--slow-hwm 10000]
//                               [--transport-only]  (adds kvcr rows without encode/decode: the ZMTP ceiling)
//                               [--repeat N]        (N runs per row, median shown; the machine is shared)
//                               [--fan-in N]        (N PUB sockets in one process → 1 SUB, the mocker's shape; 0 = skip)
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { LineQueue } from "../test/lines.ts";

const { values: opts } = parseArgs({
  options: {
    "duration-ms": { type: "string", default: "2000" },
    "no-libzmq": { type: "boolean", default: false },
    "no-slow": { type: "boolean", default: false },
    "slow-hwm": { type: "string", default: "10000" },
    "transport-only": { type: "boolean", default: false },
    repeat: { type: "string", default: "1" },
    "fan-in": { type: "string", default: "1000" },
  },
});
const durationMs = Number(opts["duration-ms"]);
const repeat = Math.max(1, Number(opts.repeat));
const slowHwm = Number(opts["slow-hwm"]);
const HWM = 100_000; // what the mocker sets
const here = new URL(".", import.meta.url).pathname;
// BENCH_BUN_FLAGS, e.g. "--cpu-prof-md --cpu-prof-dir=.tmp/prof", is passed to the Bun peers.
const bunFlags = (process.env.BENCH_BUN_FLAGS ?? "").split(" ").filter(Boolean);
const COMMANDS = {
  kvcr: [process.execPath, ...bunFlags, `${here}zmq-pubsub-bun-peer.ts`],
  libzmq: ["node", `${here}zmq-pubsub-node-peer.mjs`],
} as const;
type Impl = keyof typeof COMMANDS;
type Line = Record<string, unknown>;

/** A child speaking JSON lines on stdout; lines are matched by predicate with a bounded wait. */
class Child {
  readonly proc;
  private readonly stdout: LineQueue<Line>;
  constructor(cmd: readonly string[], onLine?: (l: Line) => void) {
    this.proc = Bun.spawn([...cmd], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
    this.stdout = new LineQueue(this.proc.stdout, (l) => JSON.parse(l) as Line, onLine);
  }
  send(line: string) {
    this.proc.stdin.write(line + "\n");
    this.proc.stdin.flush();
  }
  next(match: (l: Line) => boolean, timeoutMs: number, what: string): Promise<Line> {
    return this.stdout.next(match, timeoutMs, what);
  }
  /** Closes stdin (the peer's cue to exit), then kills it if it has not exited within 2 s. */
  async kill() {
    try {
      this.proc.kill("SIGCONT");
      this.proc.stdin.end();
    } catch {}
    const exited = await Promise.race([this.proc.exited.then(() => true), Bun.sleep(2000).then(() => false)]);
    if (!exited) this.proc.kill("SIGKILL");
    await this.proc.exited;
  }
}

interface Result {
  impl: Impl | "kvcr-raw";
  blocks: number;
  payloadBytes: number;
  msgsPerSec: number;
  sent: number;
  received: number;
  dropped: number;
  badDecodes: number;
  /** CPU time over wall time of each side (1.0 = one core busy). */
  pubCpu: number;
  subCpu: number;
}

async function throughput(impl: Impl, blocks: number, transportOnly = false): Promise<Result> {
  const pub = new Child([...COMMANDS[impl], "pub", JSON.stringify({ blocks, durationMs, hwm: HWM, transportOnly })]);
  let sub: Child | undefined;
  try {
    const { endpoint } = await pub.next((l) => "endpoint" in l, 20_000, `${impl} publisher endpoint`);
    sub = new Child([...COMMANDS[impl], "sub", JSON.stringify({ endpoint, blocks, transportOnly })]);
    pub.send("warm");
    await sub.next((l) => l.warm === true, 20_000, `${impl} subscriber warm-up`);
    pub.send("go");
    const r = await sub.next((l) => "received" in l, durationMs + 60_000, `${impl} subscriber result`);
    const p = await pub.next((l) => l.done === true, 20_000, `${impl} publisher result`);
    const received = r.received as number;
    return {
      impl: transportOnly ? "kvcr-raw" : impl, blocks, received,
      payloadBytes: p.payloadBytes as number,
      msgsPerSec: received / ((r.elapsedMs as number) / 1000),
      sent: p.sent as number,
      dropped: (p.sent as number) - received,
      badDecodes: r.badDecodes as number,
      pubCpu: (p.cpuMs as number) / (p.elapsedMs as number),
      subCpu: (r.cpuMs as number) / (r.elapsedMs as number),
    };
  } finally {
    await sub?.kill();
    await pub.kill();
  }
}

/** N PUB sockets in one Bun process, each publishing one 1-block batch per tick, into one SUB. */
async function fanIn(count: number): Promise<void> {
  const blocks = 1;
  const pub = new Child([...COMMANDS.kvcr, "fanpub", JSON.stringify({ count, blocks, durationMs })]);
  let sub: Child | undefined;
  try {
    const { endpoints } = await pub.next((l) => "endpoints" in l, 30_000, "fan-in publisher endpoints");
    sub = new Child([...COMMANDS.kvcr, "fansub", JSON.stringify({ blocks })]);
    sub.send(JSON.stringify({ endpoints }));
    const r = await sub.next((l) => "received" in l, durationMs + 60_000, "fan-in subscriber result");
    const p = await pub.next((l) => l.done === true, 20_000, "fan-in publisher result");
    const rate = (r.received as number) / ((r.elapsedMs as number) / 1000);
    console.log(`\nFan-in: ${fmt(count)} PUB sockets in one process, one ${blocks}-block batch each per tick, into one SUB process`);
    console.log(`  ${fmt(rate)} msgs/s received (${fmt(r.received as number)} of ${fmt(p.sent as number)} sent, ${r.badDecodes} bad decodes), CPU pub/sub ${((p.cpuMs as number) / (p.elapsedMs as number)).toFixed(2)}/${((r.cpuMs as number) / (r.elapsedMs as number)).toFixed(2)}`);
  } finally {
    await sub?.kill();
    await pub.kill();
  }
}

async function slowSubscriber(): Promise<void> {
  const blocks = 32;
  const slowMs = Math.max(durationMs, 3000);
  console.log(`\nSlow subscriber: kvcr-mock PUB, ${blocks}-block batches, sendHighWaterMark ${slowHwm}; the SUB is SIGSTOPped after its first message`);
  console.log("  t ms   sends/s     dropped    queued   RSS MB  heap MB");
  const pub = new Child([...COMMANDS.kvcr, "pub", JSON.stringify({ blocks, durationMs: slowMs, hwm: slowHwm, sample: true })], (l) => {
    const s = l.sample as Record<string, number> | undefined;
    if (s) console.log(`  ${String(s.tMs).padStart(5)}  ${fmt(s.sendsPerSec!).padStart(9)}  ${fmt(s.dropped!).padStart(10)}  ${fmt(s.queued!).padStart(8)}  ${String(s.rssMB).padStart(7)}  ${String(s.heapMB).padStart(7)}`);
  });
  let sub: Child | undefined;
  try {
    const { endpoint } = await pub.next((l) => "endpoint" in l, 20_000, "publisher endpoint");
    sub = new Child([...COMMANDS.kvcr, "sub", JSON.stringify({ endpoint, blocks })]);
    pub.send("warm");
    await sub.next((l) => l.warm === true, 20_000, "subscriber warm-up");
    sub.proc.kill("SIGSTOP");
    pub.send("go");
    const p = await pub.next((l) => l.done === true, slowMs + 30_000, "publisher result");
    const wire = (p.payloadBytes as number) + 8 + 8 + 2 + 2 + 9;
    console.log(`  publisher: ${fmt((p.sent as number) / ((p.elapsedMs as number) / 1000))} sends/s overall, ${fmt(p.dropped as number)} dropped, max queued ${fmt(p.maxQueued as number)} ≤ HWM ${fmt(slowHwm)} (≈ ${((slowHwm * wire) / 1e6).toFixed(1)} MB of messages)`);
  } finally {
    await sub?.kill();
    await pub.kill();
  }
}

const LABELS = { kvcr: "kvcr (Bun)", "kvcr-raw": "kvcr no-codec", libzmq: "libzmq (Node)" } as const;
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

console.log(`PUB→SUB throughput, two processes over loopback TCP, msgpack encode + decode included (${durationMs} ms per run, median of ${repeat})`);
// CPU pub/sub is CPU time over wall time per process: a bottleneck side well under 1.0 means the
// run was starved by other load on the host (the 1-min load average is printed before and after).
console.log(`host: ${navigator.hardwareConcurrency} CPUs, load average ${loadavg()[0]!.toFixed(2)} at start`);
console.log("impl         blocks  payload B      msgs/s     MB/s        sent    received   dropped  vs libzmq  CPU pub/sub");
const results: Result[] = [];
/** Median run by msgs/s over `repeat` runs. */
async function median(run: () => Promise<Result>): Promise<Result> {
  const runs: Result[] = [];
  for (let i = 0; i < repeat; i++) runs.push(await run());
  runs.sort((a, b) => a.msgsPerSec - b.msgsPerSec);
  return runs[Math.floor(runs.length / 2)]!;
}

for (const blocks of [1, 32]) {
  const ref = opts["no-libzmq"] ? undefined : await median(() => throughput("libzmq", blocks));
  const ours = await median(() => throughput("kvcr", blocks));
  const raw = opts["transport-only"] ? [await median(() => throughput("kvcr", blocks, true))] : [];
  for (const r of ref ? [ours, ...raw, ref] : [ours, ...raw]) {
    results.push(r);
    const ratio = ref ? `${(r.msgsPerSec / ref.msgsPerSec).toFixed(2)}x` : "-";
    console.log(
      `${LABELS[r.impl].padEnd(13)}${String(r.blocks).padStart(6)}${String(r.payloadBytes).padStart(11)}${fmt(r.msgsPerSec).padStart(12)}${((r.msgsPerSec * r.payloadBytes) / 1e6).toFixed(1).padStart(9)}${fmt(r.sent).padStart(12)}${fmt(r.received).padStart(12)}${fmt(r.dropped).padStart(10)}${ratio.padStart(11)}   ${r.pubCpu.toFixed(2)}/${r.subCpu.toFixed(2)}`,
    );
    if (r.badDecodes > 0) console.log(`  !! ${r.badDecodes} payloads did not decode to ${r.blocks} blocks`);
  }
}
if (Number(opts["fan-in"]) > 0) await fanIn(Number(opts["fan-in"]));
if (!opts["no-slow"]) await slowSubscriber();
console.log(`\nhost load average ${loadavg()[0]!.toFixed(2)} at end`);
