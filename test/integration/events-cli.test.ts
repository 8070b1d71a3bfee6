// `kvcr-mock events` as a user runs it (the CLI in a child process) against a PUB + replay ROUTER
// stood up here: replay first, live after without duplicates, gap and error lines, topic filter,
// a silent replay socket, bad flags.
import { describe, expect, test } from "bun:test";
import { encodeBatch, encodeSeq, decodeSeq, REPLAY_END_SEQ, type VllmKvEventBatch } from "../../src/protocol/kv-events/index.ts";
import { ReplayBuffer } from "../../src/roles/mocker/replay-buffer.ts";
import { PubSocket, RouterSocket } from "../../src/transport/zmtp/index.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { cleanupList, CLI_ENTRY, runCli, spawnChild, waitFor, withTimeout } from "../harness.ts";
import { spawnTap, type TapLine } from "./events-tap.ts";

const logger = createLogger({ level: "silent" });
const te = new TextEncoder();
const EMPTY = new Uint8Array(0);
const batch = (seq: number): VllmKvEventBatch => ({
  ts: 1_700_000_000.5 + seq,
  dataParallelRank: 1,
  events: [
    { type: "BlockStored", blockHashes: [0xcb38e4d7fb2dca5cn + BigInt(seq)], parentBlockHash: null, tokenIds: [1, 2, 3, 4], blockSize: 4, loraId: null, medium: "GPU", loraName: null },
  ],
});

const cleanups = cleanupList();
function tap(args: string[]) {
  const t = spawnTap(args);
  cleanups.push(() => t[Symbol.asyncDispose]());
  return t;
}
function worker() {
  const pub = new PubSocket({ logger });
  const router = new RouterSocket({ logger });
  cleanups.push(() => pub.close(), () => router.close());
  const buffer = new ReplayBuffer(100);
  const topic = te.encode("");
  return {
    pub,
    router,
    buffer,
    liveEp: pub.bind("tcp://127.0.0.1:0"),
    replayEp: router.bind("tcp://127.0.0.1:0"),
    /** Publishes like a vLLM worker: the same payload bytes go live and into the replay buffer. */
    publish(seq: number, payload = encodeBatch(batch(seq)), t = topic) {
      buffer.push(BigInt(seq), payload);
      pub.send([t, encodeSeq(BigInt(seq)), payload]);
    },
    /** Answers one replay request: every buffered batch from `start`, then the end marker (docs/http-api.md). */
    reply(id: Uint8Array, start: bigint) {
      for (const [seq, payload] of buffer.from(start)) router.send([id, EMPTY, topic, encodeSeq(seq), payload]);
      router.send([id, EMPTY, EMPTY, encodeSeq(REPLAY_END_SEQ), EMPTY]);
    },
    /** Answers like a real vLLM worker (ZmqEventPublisher._service_replay): no topic frame. */
    replyVllm(id: Uint8Array, start: bigint) {
      for (const [seq, payload] of buffer.from(start)) router.send([id, EMPTY, encodeSeq(seq), payload]);
      router.send([id, EMPTY, encodeSeq(REPLAY_END_SEQ), EMPTY]);
    },
  };
}
const view = (lines: TapLine[]) =>
  lines.map((l) => ("gap" in l ? `gap ${(l.gap as { expected: number }).expected}->${(l.gap as { got: number }).got}` : "error" in l ? `error@${l.seq}` : l.seq));

describe("kvcr-mock events", () => {
  test("replay from --from-seq, then live: each seq once, gaps and bad frames reported, tap continues", async () => {
    const w = worker();
    for (let s = 0; s <= 4; s++) w.publish(s);
    const t = tap(["--endpoint", w.liveEp, "--replay", w.replayEp, "--from-seq", "2"]);
    // The tap subscribes to live before it asks for replay.
    await waitFor(() => w.pub.subscriberCount() === 1, { timeoutMs: 10_000, what: "the tap's subscription" });
    const [id, delimiter, start] = await withTimeout(w.router.receive(), 10_000, "the replay request");
    expect(delimiter!.length).toBe(0);
    expect(decodeSeq(start!)).toBe(2n);
    w.publish(5); // live while the replay is pending: must print once, after 4
    w.reply(id!, decodeSeq(start!));
    w.publish(6);
    w.publish(7, new Uint8Array([0x93, 0xc1]));
    w.publish(8);
    w.publish(10);
    await t.until((l) => l.seq === 10 && "events" in l, "the last live batch");
    expect(view(t.lines)).toEqual([2, 3, 4, 5, 6, "error@7", 8, "gap 9->10", 10]);
    expect(t.lines[0]).toEqual({
      seq: 2,
      topic: "",
      ts: 1_700_000_002.5,
      data_parallel_rank: 1,
      events: [{ type: "BlockStored", block_hashes: [String(0xcb38e4d7fb2dca5cn + 2n)], parent_block_hash: null, token_ids: [1, 2, 3, 4], block_size: 4, lora_id: null, medium: "GPU", lora_name: null }],
    });
    expect(String(t.lines[5]!.error)).toMatch(/byte/);
    t.proc.kill("SIGTERM");
    expect(await withTimeout(t.proc.exited, 10_000, "the tap to exit on SIGTERM")).toBe(0);
  });

  test("a replay socket answering in vLLM's form ([id, \"\", seq, payload], no topic frame): replay, then live", async () => {
    const w = worker();
    for (let s = 0; s <= 3; s++) w.publish(s);
    const t = tap(["--endpoint", w.liveEp, "--replay", w.replayEp, "--from-seq", "1"]);
    await waitFor(() => w.pub.subscriberCount() === 1, { timeoutMs: 10_000, what: "the tap's subscription" });
    const [id, , start] = await withTimeout(w.router.receive(), 10_000, "the replay request");
    w.publish(4);
    w.replyVllm(id!, decodeSeq(start!));
    w.publish(5);
    await t.until((l) => l.seq === 5, "the live batch after the replay");
    expect(view(t.lines)).toEqual([1, 2, 3, 4, 5]);
    expect(t.lines[0]).toMatchObject({ seq: 1, topic: "", data_parallel_rank: 1 });
    expect(t.stderr()).toBe("");
  });

  test("live only with --topic: other topics are not printed", async () => {
    const w = worker();
    const t = tap(["--endpoint", w.liveEp, "--topic", "kv@1"]);
    await waitFor(() => w.pub.subscriberCount("kv@1") === 1, { timeoutMs: 10_000, what: "the tap's subscription" });
    w.publish(0, encodeBatch(batch(0)), te.encode("kv@2"));
    w.publish(1, encodeBatch(batch(1)), te.encode("kv@1"));
    await t.until((l) => l.seq === 1, "the kv@1 batch");
    expect(t.lines.map((l) => [l.seq, l.topic])).toEqual([[1, "kv@1"]]);
  });

  test("a silent replay socket: an error line after --replay-timeout-ms, then live", async () => {
    const w = worker();
    const t = tap(["--endpoint", w.liveEp, "--replay", w.replayEp, "--replay-timeout-ms", "300"]);
    await waitFor(() => w.pub.subscriberCount() === 1, { timeoutMs: 10_000, what: "the tap's subscription" });
    await withTimeout(w.router.receive(), 10_000, "the replay request (left unanswered)");
    w.publish(0);
    await t.until((l) => l.seq === 0, "the live batch after the timeout");
    expect(t.lines[0]).toEqual({ error: `replay: no end marker from ${w.replayEp} within 300 ms; continuing with the live stream` });
  });

  test("stdout closed by the reader (`events | head -n 1`): the tap stops and exits 0", async () => {
    const w = worker();
    const child = spawnChild([process.execPath, CLI_ENTRY, "events", "--endpoint", w.liveEp, "--log-level", "warn"]);
    cleanups.push(() => child[Symbol.asyncDispose]());
    const { proc } = child;
    await waitFor(() => w.pub.subscriberCount() === 1, { timeoutMs: 10_000, what: "the tap's subscription" });
    let seq = 0;
    w.publish(seq++);
    const reader = proc.stdout.getReader();
    const first = await withTimeout(reader.read(), 10_000, "the first line");
    expect(new TextDecoder().decode(first.value)).toStartWith('{"seq":0,');
    await reader.cancel(); // what `head -n 1` does after its line: the pipe's read end goes away
    // The tap learns of it on its next write (EPIPE); keep publishing until it has gone.
    await waitFor(() => (w.publish(seq++), proc.exitCode !== null), { timeoutMs: 10_000, what: "the tap to exit after its stdout closed" });
    expect(proc.exitCode).toBe(0);
    expect(await new Response(proc.stderr).text()).toBe("");
  });

  test("bad flags exit 2 before anything starts, naming each problem", async () => {
    const missing = await runCli(["events"]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain("--endpoint: required");
    const bad = await runCli(["events", "--endpoint", "tcp://127.0.0.1", "--replay", "udp://x:1"]);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--endpoint: got "tcp://127.0.0.1", missing :PORT');
    expect(bad.stderr).toContain('--replay: got "udp://x:1", only the tcp:// transport is supported');
    const negative = await runCli(["events", "--endpoint", "tcp://127.0.0.1:1", "--replay", "tcp://127.0.0.1:2", "--from-seq", "-1"]);
    expect(negative.exitCode).toBe(2);
    expect(negative.stderr).toContain('--from-seq: got "-1", expected a decimal integer from 0 to 18446744073709551615');
    // Seqs are u64: beyond 2^64-1 is refused up front (it used to throw inside the running tap).
    const huge = await runCli(["events", "--endpoint", "tcp://127.0.0.1:1", "--replay", "tcp://127.0.0.1:2", "--from-seq", "99999999999999999999"]);
    expect(huge.exitCode).toBe(2);
    expect(huge.stderr).toContain('--from-seq: got "99999999999999999999", expected a decimal integer from 0 to 18446744073709551615');
    const orphan = await runCli(["events", "--endpoint", "tcp://127.0.0.1:1", "--from-seq", "3"]);
    expect(orphan.exitCode).toBe(2);
    expect(orphan.stderr).toContain("--from-seq: got 3, but it only applies with --replay");
  });
});
