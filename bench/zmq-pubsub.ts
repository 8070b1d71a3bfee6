// PUB→SUB throughput between two processes for a 1-block and a 32-block vLLM KV-event batch, with
// msgpack encode (publisher) and decode (subscriber) through src/protocol/kv-events included, and
// the same without the codec (one pre-encoded payload: the transport alone). Peers measured in the
// same run: zeromq.js on Node (libzmq through a JS binding, msgpackr codec) for the codec rows, and
// libzmq from C (bench/zmq-pubsub-c-peer.c, built here against Debian's libzmq3-dev) for the
// no-codec rows. Every publisher paces the same way: batches of 256 sends, and at the HWM it waits
// for room instead of dropping. Then a subscriber that stops reading (SIGSTOP): the publisher's
// rate and memory stay bounded.
//   npx bun bench/zmq-pubsub.ts [--duration-ms 2000] [--no-libzmq] [--no-slow] [--slow-hwm 10000]
//                               [--repeat N]        (N runs per row, median shown; the machine is shared)
//                               [--fan-in N]        (N PUB sockets in one process → 1 SUB, the mocker's shape; 0 = skip)
//                               [--no-throughput] [--slow-ms 3000]  (only / how long the slow-subscriber run)
// The C peer needs a C compiler and libzmq's headers (`sudo apt-get install gcc libzmq3-dev` on
// Debian/Ubuntu); without them its rows are skipped with a line saying so.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { kvWorkload } from "./kv-workload.ts";
import { LineQueue } from "../test/lines.ts";

const { values: opts } = parseArgs({
  options: {
    "duration-ms": { type: "string", default: "2000" },
    "no-libzmq": { type: "boolean", default: false },
    "no-slow": { type: "boolean", default: false },
    "no-throughput": { type: "boolean", default: false },
    "slow-ms": { type: "string", default: "3000" },
    "slow-hwm": { type: "string", default: "10000" },
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
const scratch = mkdtempSync(join(tmpdir(), "kvcr-zmq-bench-"));
process.on("exit", () => rmSync(scratch, { recursive: true, force: true }));

/** Builds the C peer; undefined (with the reason printed) when there is no compiler or libzmq. */
function buildCPeer(): string | undefined {
  const bin = join(scratch, "zmq-pubsub-c-peer");
  const cc = process.env.CC ?? "cc";
  try {
    const r = Bun.spawnSync([cc, "-O2", "-o", bin, `${here}zmq-pubsub-c-peer.c`, "-lzmq"], { stdout: "pipe", stderr: "pipe" });
    if (r.exitCode === 0) return bin;
    console.log(`libzmq (C) rows skipped: ${cc} could not build bench/zmq-pubsub-c-peer.c (${r.stderr.toString().split("\n")[0]}); install libzmq's headers: sudo apt-get install libzmq3-dev`);
  } catch {
    console.log(`libzmq (C) rows skipped: no C compiler (${cc}); install one and libzmq's headers: sudo apt-get install gcc libzmq3-dev`);
  }
  return undefined;
}

const cPeer = opts["no-libzmq"] ? undefined : buildCPeer();
type Impl = "kvcr" | "kvcr-raw" | "zeromqjs" | "libzmq-c";
const PEERS = {
  kvcr: [process.execPath, ...bunFlags, `${here}zmq-pubsub-bun-peer.ts`],
  zeromqjs: ["node", `${here}zmq-pubsub-node-peer.mjs`],
} as const;

/** The command lines of one run's publisher and subscriber. */
function commands(impl: Impl, blocks: number, hwm: number, extra: Record<string, unknown> = {}) {
  if (impl === "libzmq-c") {
    const payload = kvWorkload(blocks).encode(0); // the bytes the no-codec Bun run sends
    const file = join(scratch, `payload-${blocks}.bin`);
    writeFileSync(file, payload);
    return {
      pub: [cPeer!, "pub", String(hwm), String(durationMs), file],
      sub: (endpoint: string) => [cPeer!, "sub", endpoint, String(payload.length)],
    };
  }
  const base = impl === "zeromqjs" ? PEERS.zeromqjs : PEERS.kvcr;
  const transportOnly = impl === "kvcr-raw";
  return {
    pub: [...base, "pub", JSON.stringify({ blocks, durationMs, hwm, transportOnly, ...extra })],
    sub: (endpoint: string) => [...base, "sub", JSON.stringify({ endpoint, blocks, transportOnly })],
  };
}
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
  impl: Impl;
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

async function throughput(impl: Impl, blocks: number): Promise<Result> {
  const cmd = commands(impl, blocks, HWM);
  const pub = new Child(cmd.pub);
  let sub: Child | undefined;
  try {
    const { endpoint } = await pub.next((l) => "endpoint" in l, 20_000, `${impl} publisher endpoint`);
    sub = new Child(cmd.sub(endpoint as string));
    pub.send("warm");
    await sub.next((l) => l.warm === true, 20_000, `${impl} subscriber warm-up`);
    pub.send("go");
    const r = await sub.next((l) => "received" in l, durationMs + 60_000, `${impl} subscriber result`);
    const p = await pub.next((l) => l.done === true, 20_000, `${impl} publisher result`);
    const received = r.received as number;
    return {
      impl, blocks, received,
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
  const pub = new Child([...PEERS.kvcr, "fanpub", JSON.stringify({ count, blocks, durationMs })]);
  let sub: Child | undefined;
  try {
    const { endpoints } = await pub.next((l) => "endpoints" in l, 30_000, "fan-in publisher endpoints");
    sub = new Child([...PEERS.kvcr, "fansub", JSON.stringify({ blocks })]);
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
  const slowMs = Number(opts["slow-ms"]);
  console.log(`\nSlow subscriber: kvcr-mock PUB, ${blocks}-block batches, sendHighWaterMark ${slowHwm}; the SUB is SIGSTOPped after its first message`);
  console.log("  t ms   sends/s     dropped    queued   RSS MB  heap MB  buffers MB  external MB");
  const pub = new Child([...PEERS.kvcr, "pub", JSON.stringify({ blocks, durationMs: slowMs, hwm: slowHwm, sample: true })], (l) => {
    const s = l.sample as Record<string, number> | undefined;
    if (s) console.log(`  ${String(s.tMs).padStart(5)}  ${fmt(s.sendsPerSec!).padStart(9)}  ${fmt(s.dropped!).padStart(10)}  ${fmt(s.queued!).padStart(8)}  ${String(s.rssMB).padStart(7)}  ${String(s.heapMB).padStart(7)}  ${String(s.buffersMB).padStart(10)}  ${String(s.externalMB).padStart(11)}`);
  });
  let sub: Child | undefined;
  try {
    const { endpoint } = await pub.next((l) => "endpoint" in l, 20_000, "publisher endpoint");
    sub = new Child([...PEERS.kvcr, "sub", JSON.stringify({ endpoint, blocks })]);
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

const LABELS: Record<Impl, string> = {
  kvcr: "kvcr-mock (Bun)",
  zeromqjs: "zeromq.js on Node",
  "kvcr-raw": "kvcr-mock (Bun)",
  "libzmq-c": "libzmq (C)",
};
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

console.log(`PUB→SUB throughput, two processes over loopback TCP (${durationMs} ms per run, median of ${repeat}); send HWM ${fmt(HWM)}, publishers wait at the HWM`);
// CPU pub/sub is CPU time over wall time per process: a bottleneck side well under 1.0 means the
// run was starved by other load on the host (the 1-min load average is printed before and after).
console.log(`host: ${navigator.hardwareConcurrency} CPUs, load average ${loadavg()[0]!.toFixed(2)} at start`);
/** Median run by msgs/s over `repeat` runs. */
async function median(run: () => Promise<Result>): Promise<Result> {
  const runs: Result[] = [];
  for (let i = 0; i < repeat; i++) runs.push(await run());
  runs.sort((a, b) => a.msgsPerSec - b.msgsPerSec);
  return runs[Math.floor(runs.length / 2)]!;
}
function row(r: Result, peer: Result | undefined): void {
  const ratio = peer ? `${(r.msgsPerSec / peer.msgsPerSec).toFixed(2)}x` : "";
  console.log(
    `  ${LABELS[r.impl].padEnd(19)}${String(r.blocks).padStart(6)}${String(r.payloadBytes).padStart(10)}${fmt(r.msgsPerSec).padStart(12)}${((r.msgsPerSec * r.payloadBytes) / 1e6).toFixed(1).padStart(8)}${fmt(r.sent).padStart(12)}${fmt(r.received).padStart(12)}${fmt(r.dropped).padStart(9)}${ratio.padStart(9)}   ${r.pubCpu.toFixed(2)}/${r.subCpu.toFixed(2)}`,
  );
  if (r.badDecodes > 0) console.log(`  !! ${r.badDecodes} payloads did not decode to ${r.blocks} blocks`);
}
const HEAD = "  impl               blocks payload B      msgs/s    MB/s        sent    received  dropped  vs peer   CPU pub/sub";

if (!opts["no-throughput"]) {
console.log("\nWith the codec: the publisher encodes each batch (msgpack, vLLM layout), the subscriber decodes it");
console.log(HEAD);
for (const blocks of [1, 32]) {
  const peer = opts["no-libzmq"] ? undefined : await median(() => throughput("zeromqjs", blocks));
  row(await median(() => throughput("kvcr", blocks)), peer);
  if (peer) row(peer, undefined);
}
console.log("\nTransport only: one pre-encoded payload sent in a loop, the subscriber checks its length (no msgpack)");
console.log(HEAD);
for (const blocks of [1, 32]) {
  const peer = cPeer ? await median(() => throughput("libzmq-c", blocks)) : undefined;
  row(await median(() => throughput("kvcr-raw", blocks)), peer);
  if (peer) row(peer, undefined);
}
}
if (Number(opts["fan-in"]) > 0) await fanIn(Number(opts["fan-in"]));
if (!opts["no-slow"]) await slowSubscriber();
console.log(`\nhost load average ${loadavg()[0]!.toFixed(2)} at end`);
