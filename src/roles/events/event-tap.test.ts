import { describe, expect, test } from "bun:test";
import { encodeBatch, encodeSeq, REPLAY_END_SEQ, type VllmKvEventBatch } from "../../protocol/kv-events/index.ts";
import { pack } from "../../protocol/msgpack.ts";
import { EventTap, type TapLine } from "./event-tap.ts";

const te = new TextEncoder();
const EMPTY = new Uint8Array(0);
const batch = (seq: number): VllmKvEventBatch => ({
  ts: 1_700_000_000 + seq,
  dataParallelRank: 0,
  events: [{ type: "BlockRemoved", blockHashes: [BigInt(seq) + 0xffff_ffff_ffffn], medium: "GPU" }],
});
const live = (seq: number, topic = "") => [te.encode(topic), encodeSeq(BigInt(seq)), encodeBatch(batch(seq))];
const replayed = (seq: number, topic = "") => [EMPTY, te.encode(topic), encodeSeq(BigInt(seq)), encodeBatch(batch(seq))];
const END = [EMPTY, EMPTY, encodeSeq(REPLAY_END_SEQ), EMPTY];
// What a real vLLM worker's replay ROUTER sends (ZmqEventPublisher._service_replay): no topic frame.
const vllmReplayed = (seq: number) => [EMPTY, encodeSeq(BigInt(seq)), encodeBatch(batch(seq))];
const VLLM_END = [EMPTY, encodeSeq(REPLAY_END_SEQ), EMPTY];

function tapWith(opts: ConstructorParameters<typeof EventTap>[1] = {}) {
  const lines: TapLine[] = [];
  const tap = new EventTap((l) => lines.push(l), opts);
  /** Compact view: batch seqs as numbers, gaps and errors as tagged strings. */
  const view = () =>
    lines.map((l) => ("gap" in l ? `gap ${l.gap.expected}->${l.gap.got}` : "error" in l ? `error${l.seq !== undefined ? ` @${l.seq}` : ""}` : l.seq));
  return { tap, lines, view };
}

describe("EventTap", () => {
  test("live only: one line per batch, vLLM field names, hashes as decimal strings", () => {
    const { tap, lines } = tapWith();
    tap.live(live(7, "kv"));
    expect(lines).toEqual([
      { seq: 7, topic: "kv", ts: 1_700_000_007, data_parallel_rank: 0, events: [{ type: "BlockRemoved", block_hashes: [String(7n + 0xffff_ffff_ffffn)], medium: "GPU" }] },
    ]);
  });

  test("live only: the first batch sets the expectation, later holes and restarts are gap lines", () => {
    const { tap, view } = tapWith();
    for (const s of [5, 6, 9, 0, 1]) tap.live(live(s));
    expect(view()).toEqual([5, 6, "gap 7->9", 9, "gap 10->0", 0, 1]);
  });

  test("replay first, live held meanwhile, then live without duplicates", () => {
    const { tap, view } = tapWith({ replayFrom: 2n });
    tap.live(live(4)); // arrives on the SUB while the replay is still running
    tap.live(live(5));
    for (const s of [2, 3, 4]) tap.replayReply(replayed(s));
    expect(view()).toEqual([2, 3, 4]);
    tap.replayReply(END);
    tap.live(live(6));
    expect(view()).toEqual([2, 3, 4, 5, 6]);
  });

  test("a replay start older than the buffer shows as a gap from the first replayed seq", () => {
    const { tap, view } = tapWith({ replayFrom: 0n });
    tap.replayReply(replayed(3));
    tap.replayReply(END);
    expect(view()).toEqual(["gap 0->3", 3]);
  });

  test("a hole between replay and live is a gap", () => {
    const { tap, view } = tapWith({ replayFrom: 10n });
    tap.replayReply(replayed(10));
    tap.replayReply(END);
    tap.live(live(12));
    expect(view()).toEqual([10, "gap 11->12", 12]);
  });

  test("an empty replay goes straight to live", () => {
    const empty = tapWith({ replayFrom: 0n });
    empty.tap.replayReply(END);
    empty.tap.live(live(0));
    expect(empty.view()).toEqual([0]);
  });

  test("after the overlap, a lower live seq is a publisher restart, not a duplicate", () => {
    const { tap, view } = tapWith({ replayFrom: 0n });
    for (const s of [0, 1, 2]) tap.replayReply(replayed(s));
    tap.replayReply(END);
    tap.live(live(2)); // in flight before the snapshot: duplicate, skipped
    tap.live(live(3));
    tap.live(live(0)); // restart
    expect(view()).toEqual([0, 1, 2, 3, "gap 4->0", 0]);
  });

  test("bad frames print an error line and the tap continues", () => {
    const { tap, lines, view } = tapWith();
    tap.live(live(1));
    tap.live([te.encode("t"), encodeSeq(2n)]);
    tap.live([te.encode("t"), new Uint8Array(3), encodeBatch(batch(3))]);
    tap.live([te.encode("t"), encodeSeq(2n), new Uint8Array([0xc1])]);
    tap.live(live(3));
    expect(view()).toEqual([1, "error", "error", "error @2", 3]);
    expect(lines[1]).toEqual({ error: "live message: expected [topic, seq (8 bytes), payload], got 2 frame(s)" });
    expect((lines[2] as { error: string }).error).toBe("live message: seq frame has 3 bytes, expected 8");
    expect((lines[3] as { error: string }).error).toMatch(/at byte 0/);
    // Not msgpack at all: the reason alone, no generic view.
    expect(lines[3]).not.toHaveProperty("payload");
  });

  test("a payload the vLLM decoder refuses is shown whole, decoded generically, 64-bit ints exact", () => {
    const { tap, lines, view } = tapWith();
    // A newer vLLM's event type, hashes across the 2^53 and 2^63 boundaries, bytes, an odd key.
    const foreign = pack({ ts: 2.5, events: [{ type: "BlockEvicted", block_hashes: [2n ** 63n + 5n, 2n ** 60n + 1n, 7], raw: Uint8Array.from([1, 255]), __proto__: "x" }], data_parallel_rank: 1 });
    tap.live([te.encode("kv"), encodeSeq(4n), foreign]);
    tap.live(live(5, "kv"));
    expect(view()).toEqual(["error @4", 5]);
    expect(lines[0]).toEqual({
      error: expect.stringContaining('event type: unknown "BlockEvicted"'),
      seq: 4,
      topic: "kv",
      payload: { ts: 2.5, events: [{ type: "BlockEvicted", block_hashes: ["9223372036854775813", "1152921504606846977", 7], raw: "01ff", __proto__: "x" }], data_parallel_rank: 1 },
    });
    expect(Object.getPrototypeOf(((lines[0] as { payload?: unknown }).payload as { events: object[] }).events[0])).toBe(Object.prototype);
  });

  test("only well-formed replay replies under the subscribed topic are printed, malformed ones as error lines", () => {
    const { tap, lines, view } = tapWith({ replayFrom: 0n, topic: te.encode("kv") });
    tap.replayReply([EMPTY, encodeSeq(0n)]);
    tap.replayReply([EMPTY, te.encode("kv"), encodeSeq(0n), encodeBatch(batch(0)), EMPTY]);
    tap.replayReply([te.encode("x"), te.encode("kv"), encodeSeq(0n), encodeBatch(batch(0))]);
    tap.replayReply([EMPTY, te.encode("kv"), encodeSeq(0n)]); // vLLM form with a 2-byte seq frame
    tap.replayReply([EMPTY, te.encode("other"), encodeSeq(0n), encodeBatch(batch(0))]);
    tap.replayReply(replayed(0, "kv"));
    tap.replayReply(END);
    expect(view()).toEqual(["error", "error", "error", "error", 0]);
    const expected = 'replay reply: expected ["", topic, seq, payload] or vLLM\'s ["", seq, payload]';
    expect(lines.slice(0, 3)).toEqual([
      { error: `${expected}, got 2 frames` },
      { error: `${expected}, got 5 frames` },
      { error: `${expected}, got 4 frames whose first is not the empty delimiter` },
    ]);
    expect((lines[3] as { error: string }).error).toMatch(/^replay reply: seq frame: expected exactly 8 bytes, got 2/);
  });

  test("vLLM's replay form (no topic frame): batches and end marker, printed with the subscribed topic", () => {
    const { tap, lines, view } = tapWith({ replayFrom: 2n });
    tap.live(live(4));
    for (const s of [2, 3, 4]) tap.replayReply(vllmReplayed(s));
    tap.replayReply(VLLM_END);
    tap.live(live(5));
    expect(view()).toEqual([2, 3, 4, 5]);
    expect(lines[0]).toEqual({ seq: 2, topic: "", ts: 1_700_000_002, data_parallel_rank: 0, events: [{ type: "BlockRemoved", block_hashes: [String(2n + 0xffff_ffff_ffffn)], medium: "GPU" }] });
    const topical = tapWith({ replayFrom: 0n, topic: te.encode("kv@0") });
    topical.tap.replayReply(vllmReplayed(0));
    topical.tap.replayReply(VLLM_END);
    expect(topical.lines.map((l) => ("topic" in l ? l.topic : l))).toEqual(["kv@0"]);
    expect(topical.tap.isReplaying).toBe(false);
  });

  test("both reply forms may meet in one replay (each message is read by its own frame count)", () => {
    const { tap, view } = tapWith({ replayFrom: 0n });
    tap.replayReply(vllmReplayed(0));
    tap.replayReply(replayed(1));
    tap.replayReply(VLLM_END);
    expect(view()).toEqual([0, 1]);
    expect(tap.isReplaying).toBe(false);
  });

  test("a silent replay times out into live with an error line, and its late replies are ignored", () => {
    const { tap, lines, view } = tapWith({ replayFrom: 0n });
    tap.live(live(0));
    tap.replayFailed("no end marker within 10 ms");
    tap.replayReply(replayed(0));
    expect(view()).toEqual(["error", 0]);
    expect(lines[0]).toEqual({ error: "replay: no end marker within 10 ms; continuing with the live stream" });
  });

  test("live batches beyond the bounded hold during replay are dropped, reported and shown as a gap", () => {
    const { tap, view } = tapWith({ replayFrom: 0n, maxHeldLive: 2 });
    for (const s of [0, 1, 2, 3]) tap.live(live(s));
    tap.replayReply(END);
    tap.live(live(4));
    expect(view()).toEqual(["error", 0, 1, "gap 2->4", 4]);
  });
});
