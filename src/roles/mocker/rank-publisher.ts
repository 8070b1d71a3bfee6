// The raw KV-event stream of one (worker, rank), as vLLM's ZmqEventPublisher: a PUB (send HWM
// 100,000) sending [topic, seq u64 BE, payload] once per engine step that produced events, seq
// from 0 and +1 per batch, and optionally the replay ROUTER over the last batches. Event-stream
// faults (faults/event-faults.ts) act here, on the wire only: what the engine holds never changes.
import type { Logger } from "../../lib/logger.ts";
import type { KvEvent } from "../../core/kv/kv-events.ts";
import { encodeBatch, VllmKvEventsEncoding, Medium, type HostMedium } from "../../protocol/kv-events/index.ts";
import { encodeSeq, SeqFrame } from "../../protocol/seq-frame.ts";
import { PubSocket } from "../../transport/zmtp/index.ts";
import type { PortPlan } from "../../transport/port-plan.ts";
import { bindOrClose } from "./bind.ts";
import { toVllmEvents, type LoraIdOf } from "./raw-events.ts";
import { ReplayBuffer } from "./replay-buffer.ts";
import { ReplayServer } from "./replay-server.ts";

const EMPTY = new Uint8Array(0);
/** vLLM's default send HWM of the KV-event PUB (KVEventsConfig.hwm). */
export const RAW_SEND_HWM = 100_000;
/** vLLM's default replay buffer (KVEventsConfig.buffer_steps). */
export const REPLAY_BATCHES = 10_000;

export interface RankPublisherOptions {
  /** Interface to bind the PUB (and replay ROUTER) on: "0.0.0.0", "127.0.0.1", a hostname, an IPv6. */
  host: string;
  /** PUB port (`zmq_kv_events_port[worker] + rank`); 0 = pick, see `port`. */
  port: number;
  /** Replay ROUTER port (`zmq_replay_port[worker] + rank`; 0 = pick); undefined = no replay. */
  replayPort?: number;
  /** Topic frame of every batch: `--kv-events-topic` (direct) or the worker's raw topic (state agent). */
  topic: string;
  dataParallelRank: number;
  /** State-agent mode: host-tier (G2) events carry `ownership: "kvcr"`; G1 events never do. */
  kvcrOwnsHost: boolean;
  /** Medium of G2 events: CPU_PINNED (Dynamo's mocker, default) or CPU (vLLM's OffloadingConnector). */
  hostMedium?: HostMedium;
  /** map (vLLM's current form, default) or array (vLLM 0.9–0.23's positional events). */
  encoding?: VllmKvEventsEncoding;
  logger: Logger;
  /** Names this publisher in log lines; default "rank {dataParallelRank}". */
  label?: string;
  sendHighWaterMark?: number;
  replayCapacity?: number;
  /** Where port-0 binds take their ports from (the mocker's plan); default: the kernel picks. */
  ports?: PortPlan;
  /** Injected faults on this stream (the mocker's fault API); none by default. */
  faults?: PublishFaults;
}

/** What the fault API does to one batch; undefined = publish it as usual. */
export interface BatchFaultPlan {
  /** "gap": not sent, its seq used and kept for replay (a visible gap); "silent": as if never published. */
  drop?: "gap" | "silent";
  /** Sent this much later; later batches queue behind it (order kept). */
  delayMs?: number;
  /** Sent this many times (2 = duplicated). */
  copies?: number;
  /** Held back and sent right after the next batch (swapped with it). */
  holdForNext?: boolean;
  /** The live frame carries undecodable bytes instead of its payload (replay keeps the true one). */
  corrupt?: boolean;
}

export interface PublishFaults {
  plan(): BatchFaultPlan | undefined;
  /** False while replay requests are to be ignored. */
  replayOpen(): boolean;
}

/** Not msgpack: 0xc1 is the one byte msgpack never uses, so any decoder refuses the payload. */
const CORRUPT_PAYLOAD = new Uint8Array([0xc1, 0xc1, 0xc1, 0xc1]);

export interface RankPublisherStats {
  /** Batches sent (seqs used); each goes to every subscriber not at its HWM. */
  batchesPublished: number;
  eventsPublished: number;
  /** Batch copies a subscriber missed because it was at the send HWM (libzmq PUB drops, too). */
  batchesDroppedByHwm: number;
  /** Steps whose events could not be encoded (an engine bug): logged, no seq used. */
  encodeErrors: number;
  /** Batches the fault API dropped, delayed, duplicated, reordered or corrupted. */
  faultedBatches: number;
  subscribers: number;
  /** Subscribers dropped for passing a subscription bound (count, prefix length, the PUB's total). */
  subscribersOverLimits: number;
  replayRequestsServed: number;
  badReplayRequests: number;
  truncatedReplays: number;
  /** Replay requests the no_replay fault left unanswered. */
  ignoredReplayRequests: number;
}

export class RankPublisher {
  /** Bound PUB endpoint with the actual port. */
  readonly endpoint: string;
  readonly port: number;
  readonly replayEndpoint: string | undefined;
  readonly replayPort: number | undefined;
  readonly topic: string;
  readonly dataParallelRank: number;
  private readonly pub: PubSocket;
  private readonly replay: ReplayServer | undefined;
  private readonly buffer: ReplayBuffer | undefined;
  private readonly topicFrame: Uint8Array;
  /** Reused for every live batch: PubSocket.send copies frames into its queues synchronously. */
  private readonly seqFrame = new SeqFrame();
  /** [topic, seq, payload]: one array reused per batch, the payload slot filled per send. */
  private readonly frames: Uint8Array[];
  private readonly kvcrOwnsHost: boolean;
  private readonly hostMedium: HostMedium;
  /** vLLM's lora_id of an adapter name (the process's LoRA adapters set it); null ids without it. */
  loraIdOf: LoraIdOf | undefined;
  private readonly encoding: VllmKvEventsEncoding;
  private readonly logger: Logger;
  private readonly label: string;
  /** A number, not a bigint: exact to 2^53 batches, and no allocation per batch. */
  private seq = 0;
  private events = 0;
  private encodeErrors = 0;
  private faultedBatches = 0;
  /** Batches numbered so far (unlike `seq`, never reset by a fault). */
  private batches = 0;
  private readonly faults: PublishFaults | undefined;
  /** A batch held back by reorder_batches, sent after the next one. */
  private held: Uint8Array[] | undefined;
  /** Batches waiting out delay_batches, in send order. */
  private readonly delayed: { frames: Uint8Array[]; atMs: number }[] = [];
  private delayTimer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(opts: RankPublisherOptions) {
    this.topic = opts.topic;
    this.dataParallelRank = opts.dataParallelRank;
    this.kvcrOwnsHost = opts.kvcrOwnsHost;
    this.hostMedium = opts.hostMedium ?? Medium.CpuPinned;
    this.encoding = opts.encoding ?? VllmKvEventsEncoding.map;
    this.logger = opts.logger;
    this.faults = opts.faults;
    this.label = opts.label ?? `rank ${opts.dataParallelRank}`;
    this.topicFrame = new TextEncoder().encode(opts.topic);
    this.frames = [this.topicFrame, this.seqFrame.bytes, EMPTY];
    this.pub = new PubSocket({ logger: opts.logger, sendHighWaterMark: opts.sendHighWaterMark ?? RAW_SEND_HWM });
    ({ endpoint: this.endpoint, port: this.port } = bindOrClose(this.pub, opts.host, opts.port, opts.ports));
    if (opts.replayPort !== undefined) {
      this.buffer = new ReplayBuffer(opts.replayCapacity ?? REPLAY_BATCHES);
      try {
        const faults = opts.faults;
        this.replay = new ReplayServer({ host: opts.host, port: opts.replayPort, ports: opts.ports, topic: this.topicFrame, buffer: this.buffer, logger: opts.logger, label: this.label, open: faults ? () => faults.replayOpen() : undefined });
      } catch (e) {
        this.pub.close();
        throw e;
      }
      this.replayEndpoint = this.replay.endpoint;
      this.replayPort = this.replay.port;
    }
  }

  /**
   * Publishes one engine step's events as one batch (nothing when there are none). `tsSeconds` is
   * the batch's wall-clock stamp (unix seconds, float). Never throws: an event the codec refuses
   * is logged and counted, and the step publishes nothing (its seq is not used, so no gap).
   */
  publish(events: readonly KvEvent[], tsSeconds: number): void {
    if (events.length === 0 || this.closed) return;
    const plan = this.faults?.plan();
    if (plan?.drop === "silent") {
      this.faultedBatches++;
      return;
    }
    let payload: Uint8Array;
    try {
      payload = encodeBatch({ ts: tsSeconds, events: toVllmEvents(events, this.kvcrOwnsHost, this.hostMedium, this.loraIdOf), dataParallelRank: this.dataParallelRank }, this.encoding);
    } catch (e) {
      this.encodeErrors++;
      this.logger.error(`raw events ${this.label}: dropping a step of ${events.length} event(s) that cannot be encoded: ${(e as Error).message}`);
      return;
    }
    const seq = this.seq++;
    this.batches++;
    this.events += events.length;
    this.buffer?.push(BigInt(seq), payload);
    if (plan !== undefined || this.held !== undefined || this.delayed.length > 0) return this.publishFaulted(seq, payload, plan);
    this.seqFrame.set(seq);
    this.frames[2] = payload;
    this.pub.send(this.frames);
    this.frames[2] = EMPTY; // the PUB has copied it; do not pin the last payload
  }

  /** The slow path while a fault acts on this stream: frames of their own (they may wait). */
  private publishFaulted(seq: number, payload: Uint8Array, plan: BatchFaultPlan | undefined): void {
    if (plan !== undefined) this.faultedBatches++;
    const frames = [this.topicFrame, encodeSeq(BigInt(seq)), plan?.corrupt ? CORRUPT_PAYLOAD : payload];
    if (plan?.drop === "gap") return;
    if (plan?.holdForNext && this.held === undefined) {
      this.held = frames;
      return;
    }
    for (let i = 0; i < (plan?.copies ?? 1); i++) this.sendOrDelay(frames, plan?.delayMs ?? 0);
    this.flushHeld();
  }

  /** Sends the batch reorder_batches held back (after the one that overtook it, or when the fault ends). */
  flushHeld(): void {
    const held = this.held;
    this.held = undefined;
    if (held && !this.closed) this.sendOrDelay(held, 0);
  }

  private sendOrDelay(frames: Uint8Array[], delayMs: number): void {
    if (delayMs <= 0 && this.delayed.length === 0) {
      this.pub.send(frames);
      return;
    }
    const last = this.delayed[this.delayed.length - 1];
    this.delayed.push({ frames, atMs: Math.max(performance.now() + delayMs, last?.atMs ?? 0) });
    if (this.delayTimer === undefined) this.armDelay();
  }

  private armDelay(): void {
    const first = this.delayed[0];
    if (!first || this.closed) return;
    this.delayTimer = setTimeout(() => {
      this.delayTimer = undefined;
      const now = performance.now();
      while (this.delayed.length > 0 && this.delayed[0]!.atMs <= now) this.pub.send(this.delayed.shift()!.frames);
      this.armDelay();
    }, Math.max(0, first.atMs - performance.now()));
  }

  /** reset_seq: numbering starts again at 0 and the replay buffer empties, as a restarted publisher's. */
  resetSeq(): void {
    this.seq = 0;
    this.buffer?.clear();
  }

  /** A state dump's events as one payload of this stream's encoding (not published, no seq used). */
  encodeDump(events: readonly KvEvent[], tsSeconds: number): Uint8Array {
    return encodeBatch({ ts: tsSeconds, events: toVllmEvents(events, this.kvcrOwnsHost, this.hostMedium, this.loraIdOf), dataParallelRank: this.dataParallelRank }, this.encoding);
  }

  /** Seq the next batch will carry (= batches published so far). */
  get nextSeq(): number {
    return this.seq;
  }

  /** Subscribers whose subscription matches this publisher's topic. */
  subscriberCount(): number {
    return this.pub.subscriberCount(this.topicFrame);
  }

  stats(): RankPublisherStats {
    const pub = this.pub.stats();
    return {
      batchesPublished: this.batches,
      eventsPublished: this.events,
      batchesDroppedByHwm: pub.messagesDropped,
      encodeErrors: this.encodeErrors,
      faultedBatches: this.faultedBatches,
      subscribers: this.subscriberCount(),
      subscribersOverLimits: this.pub.peersOverSubscriptionLimits,
      replayRequestsServed: this.replay?.requestsServed ?? 0,
      badReplayRequests: this.replay?.badRequests ?? 0,
      truncatedReplays: this.replay?.truncatedReplies ?? 0,
      ignoredReplayRequests: this.replay?.ignoredRequests ?? 0,
    };
  }

  /** Closes the PUB and the replay ROUTER; later publish() calls do nothing. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.delayTimer);
    this.delayed.length = 0;
    this.held = undefined;
    this.pub.close();
    this.replay?.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
