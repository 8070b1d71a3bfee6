// The `events` tap's lines, free of sockets and timers: each batch as JSON, gaps and bad frames as
// lines of their own (the tap carries on). A payload the vLLM decoder refuses (a newer event type,
// another publisher's layout) is still shown, decoded generically by msgpackr, beside the reason. Replay replies are parsed by protocol/kv-events/replay.ts
// and ordered against live by ReplayThenLive (protocol/kv-events/replay-then-live.ts).
import { batchToJson, decodeBatch, parseLiveMessage, parseReplayReply } from "../../protocol/kv-events/index.ts";
import type { VllmKvEventBatchJson } from "../../protocol/kv-events/index.ts";
import { unpackJson, type PlainJson } from "../../protocol/msgpack.ts";
import { ReplayThenLive } from "../../protocol/kv-events/replay-then-live.ts";

export type TapLine =
  | VllmKvEventBatchJson
  | { gap: { expected: number | string; got: number | string } }
  | { error: string; seq?: number | string; topic?: string; payload?: PlainJson };

export interface EventTapOptions {
  /** Replay start seq; undefined = live only. */
  replayFrom?: bigint;
  /** Topic prefix (replayed batches are filtered like the live subscription). */
  topic?: Uint8Array;
  /** Live batches held while the replay runs; beyond this they are dropped (and show as a gap). */
  maxHeldLive?: number;
}

interface LiveBatch {
  topic: Uint8Array;
  payload: Uint8Array;
}

const td = new TextDecoder();
const seqJson = (s: bigint): number | string => (s <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(s) : s.toString());

export class EventTap {
  /** Next seq we expect; undefined until the first batch (live-only mode). */
  private expected: bigint | undefined;
  private readonly order: ReplayThenLive<bigint, LiveBatch>;
  private readonly maxHeldLive: number;
  private readonly topic: Uint8Array;

  constructor(
    private readonly emit: (line: TapLine) => void,
    opts: EventTapOptions = {},
  ) {
    this.expected = opts.replayFrom;
    this.maxHeldLive = opts.maxHeldLive ?? 100_000;
    this.order = new ReplayThenLive(this.maxHeldLive);
    if (opts.replayFrom !== undefined) this.order.begin();
    this.topic = opts.topic ?? new Uint8Array(0);
  }

  get isReplaying(): boolean {
    return this.order.isReplaying;
  }

  /** A live message `[topic, seq, payload]` from the SUB. */
  live(frames: Uint8Array[]): void {
    const m = parseLiveMessage(frames);
    if (!m.ok) return this.emit({ error: m.problem });
    if (this.order.live(m.seq, { topic: m.topic, payload: m.payload }) === "next") this.batch(m.topic, m.seq, m.payload);
  }

  /** A reply on the replay DEALER, in either layout; a late one after a timeout is ignored (live covers it). */
  replayReply(frames: Uint8Array[]): void {
    if (!this.order.isReplaying) return;
    const reply = parseReplayReply(frames, this.topic);
    if (reply.kind === "bad") return this.emit({ error: reply.problem });
    if (reply.kind === "end") return this.goLive();
    if (reply.kind === "other-topic") return;
    this.batch(reply.topic, reply.seq, reply.payload);
    this.order.replayed(reply.seq);
  }

  /** The replay socket stayed silent: say so and continue with what the live stream has. */
  replayFailed(reason: string): void {
    if (!this.order.isReplaying) return;
    this.emit({ error: `replay: ${reason}; continuing with the live stream` });
    this.goLive();
  }

  private goLive(): void {
    const { next, refused } = this.order.end();
    if (refused > 0) this.emit({ error: `live buffer full during replay: ${refused} live batches dropped (max ${this.maxHeldLive})` });
    for (const { seq, item } of next) this.batch(item.topic, seq, item.payload);
  }

  private batch(topic: Uint8Array, seq: bigint, payload: Uint8Array): void {
    if (this.expected !== undefined && seq !== this.expected) this.emit({ gap: { expected: seqJson(this.expected), got: seqJson(seq) } });
    this.expected = seq + 1n;
    let line: TapLine;
    try {
      line = batchToJson(decodeBatch(payload), { seq, topic: td.decode(topic) });
    } catch (err) {
      line = { error: (err as Error).message, seq: seqJson(seq), topic: td.decode(topic), ...genericPayload(payload) };
    }
    this.emit(line);
  }
}

/** The payload as generic msgpack, when it is one whole msgpack value at all (else nothing). */
function genericPayload(payload: Uint8Array): { payload?: PlainJson } {
  try {
    return { payload: unpackJson(payload) };
  } catch {
    return {};
  }
}
