// The `events` tap's ordering logic (SPEC §4.2), free of sockets and timers: replayed batches
// first, live batches held meanwhile, then live without duplicates; gaps and bad frames become
// lines of their own and the tap carries on. Output goes to `emit` as JSON-safe objects.
// Replay replies come in two forms, told apart by frame count after the empty delimiter:
//   SPEC §4.2 (our mocker):  ["", topic, seq, payload] … end ["", "", END, ""]
//   real vLLM (ZmqEventPublisher._service_replay, vllm/distributed/kv_events.py): no topic frame,
//                            ["", seq, payload] … end ["", END, ""]; printed with the --topic value.
import { startsWithBytes } from "../../lib/bytes.ts";
import { batchToJson, decodeBatch, decodeSeq, REPLAY_END_SEQ } from "../../protocol/kv-events/index.ts";
import type { KvEventBatchJson } from "../../protocol/kv-events/index.ts";

export type TapLine =
  | KvEventBatchJson
  | { gap: { expected: number | string; got: number | string } }
  | { error: string; seq?: number | string };

export interface EventTapOptions {
  /** Replay start seq; undefined = live only. */
  replayFrom?: bigint;
  /** Topic prefix (replayed batches are filtered like the live subscription). */
  topic?: Uint8Array;
  /** Live batches held while the replay runs; beyond this they are dropped (and show as a gap). */
  maxHeldLive?: number;
}

const td = new TextDecoder();
const seqJson = (s: bigint): number | string => (s <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(s) : s.toString());

export class EventTap {
  private replaying: boolean;
  /** Next seq we expect; undefined until the first batch (live-only mode). */
  private expected: bigint | undefined;
  /** Highest seq replayed; live batches up to it are duplicates while the two streams overlap. */
  private replayedUpTo: bigint | undefined;
  private overlap = false;
  private held: Uint8Array[][] = [];
  private heldDropped = 0;
  private readonly maxHeldLive: number;
  private readonly topic: Uint8Array;

  constructor(
    private readonly emit: (line: TapLine) => void,
    opts: EventTapOptions = {},
  ) {
    this.replaying = opts.replayFrom !== undefined;
    this.expected = opts.replayFrom;
    this.maxHeldLive = opts.maxHeldLive ?? 100_000;
    this.topic = opts.topic ?? new Uint8Array(0);
  }

  get isReplaying(): boolean {
    return this.replaying;
  }

  /** A live message `[topic, seq, payload]` from the SUB. */
  live(frames: Uint8Array[]): void {
    if (this.replaying) {
      if (this.held.length < this.maxHeldLive) this.held.push(frames);
      else this.heldDropped++;
      return;
    }
    this.liveNow(frames);
  }

  /**
   * A reply on the replay DEALER: `["", topic, seq, payload]` / end `["", "", END, ""]` (SPEC §4.2),
   * or vLLM's `["", seq, payload]` / end `["", END, ""]` (see the file header).
   */
  replayReply(frames: Uint8Array[]): void {
    if (!this.replaying) return; // a late reply after a timeout: live already covers it
    const expected = 'replay reply: expected ["", topic, seq, payload] or vLLM\'s ["", seq, payload]';
    if (frames.length !== 3 && frames.length !== 4) return this.emit({ error: `${expected}, got ${frames.length} frames` });
    if (frames[0]!.length !== 0) return this.emit({ error: `${expected}, got ${frames.length} frames whose first is not the empty delimiter` });
    // vLLM's form has no topic frame: its publisher has one topic for all batches, so the batch
    // carries the subscribed topic (vLLM's default is "") and is not filtered by it.
    const vllmForm = frames.length === 3;
    const topic = vllmForm ? this.topic : frames[1]!;
    const [seqFrame, payload] = frames.slice(-2) as [Uint8Array, Uint8Array];
    let seq: bigint;
    try {
      seq = decodeSeq(seqFrame);
    } catch (err) {
      return this.emit({ error: `replay reply: ${(err as Error).message}` });
    }
    if (seq === REPLAY_END_SEQ && payload.length === 0 && (vllmForm || topic.length === 0)) return this.goLive();
    if (!vllmForm && !startsWithBytes(topic, this.topic)) return;
    this.batch(topic, seq, payload);
    if (this.replayedUpTo === undefined || seq > this.replayedUpTo) this.replayedUpTo = seq;
  }

  /** The replay socket stayed silent: say so and continue with what the live stream has. */
  replayFailed(reason: string): void {
    if (!this.replaying) return;
    this.emit({ error: `replay: ${reason}; continuing with the live stream` });
    this.goLive();
  }

  private goLive(): void {
    this.replaying = false;
    this.overlap = this.replayedUpTo !== undefined;
    const held = this.held;
    this.held = [];
    if (this.heldDropped > 0) {
      this.emit({ error: `live buffer full during replay: ${this.heldDropped} live batches dropped (max ${this.maxHeldLive})` });
      this.heldDropped = 0;
    }
    for (const frames of held) this.liveNow(frames);
  }

  private liveNow(frames: Uint8Array[]): void {
    if (frames.length !== 3) return this.emit({ error: `live message: expected 3 frames [topic, seq, payload], got ${frames.length}` });
    const [topic, seqFrame, payload] = frames as [Uint8Array, Uint8Array, Uint8Array];
    let seq: bigint;
    try {
      seq = decodeSeq(seqFrame);
    } catch (err) {
      return this.emit({ error: `live message: ${(err as Error).message}` });
    }
    if (this.overlap) {
      // In-order per publisher: once live passes the replayed range, the overlap is over, and a
      // lower seq later means a publisher restart (reported as a gap), not a duplicate.
      if (seq <= this.replayedUpTo!) return;
      this.overlap = false;
    }
    this.batch(topic, seq, payload);
  }

  private batch(topic: Uint8Array, seq: bigint, payload: Uint8Array): void {
    if (this.expected !== undefined && seq !== this.expected) this.emit({ gap: { expected: seqJson(this.expected), got: seqJson(seq) } });
    this.expected = seq + 1n;
    let line: TapLine;
    try {
      line = batchToJson(decodeBatch(payload), { seq, topic: td.decode(topic) });
    } catch (err) {
      line = { error: (err as Error).message, seq: seqJson(seq) };
    }
    this.emit(line);
  }
}

