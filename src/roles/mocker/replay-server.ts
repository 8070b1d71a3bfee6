// The replay ROUTER of one raw publisher, as vLLM's ZmqEventPublisher._service_replay: each
// request gets every buffered batch from its start seq, then the end marker (the frames are
// protocol/kv-events/replay.ts's).
import type { Logger } from "../../lib/logger.ts";
import { parseReplayRequest, REPLAY_END_SEQ, replayBatchFrames, replayEndFrames } from "../../protocol/kv-events/index.ts";
import { RouterSocket, type Frames } from "../../transport/zmtp/index.ts";
import type { PortPlan } from "../../transport/port-plan.ts";
import { bindOrClose } from "./bind.ts";
import type { ReplayBuffer } from "./replay-buffer.ts";

/** A bad request is logged at most this often per server; the rest are only counted. */
const BAD_REQUEST_LOG_INTERVAL_MS = 60_000;

export interface ReplayServerOptions {
  /** Interface to bind ("0.0.0.0", "127.0.0.1", ...). */
  host: string;
  /** 0 = pick a free port (see `port`). */
  port: number;
  /** Topic bytes carried on every replayed batch (the live stream's topic). */
  topic: Uint8Array;
  buffer: ReplayBuffer;
  logger: Logger;
  /** Names this server in log lines, e.g. "worker 3 rank 1". */
  label: string;
  /** Where a port-0 bind takes its port from (the mocker's plan); default: the kernel picks. */
  ports?: PortPlan;
  /** False while requests are ignored (the no_replay fault): they get no answer at all. */
  open?: () => boolean;
}

/** Largest replay request taken: a few frames of a few bytes, with room for a peer's READY. */
const REPLAY_REQUEST_MAX_BYTES = 1024;

export class ReplayServer {
  readonly endpoint: string;
  readonly port: number;
  /** Requests answered in full (every held batch with seq ≥ start, then the end marker). */
  requestsServed = 0;
  /** Requests that were not [identity, "", 8-byte seq]: counted, logged, not answered. */
  badRequests = 0;
  /** Replies cut short because the requester's queue was full or it left (no end marker sent). */
  truncatedReplies = 0;
  private readonly socket: RouterSocket;
  private readonly topic: Uint8Array;
  private readonly buffer: ReplayBuffer;
  private readonly logger: Logger;
  private readonly label: string;
  private readonly open: (() => boolean) | undefined;
  /** Requests left unanswered by the no_replay fault. */
  ignoredRequests = 0;
  private lastBadLogMs = -Infinity;
  private badSinceLog = 0;

  constructor(opts: ReplayServerOptions) {
    this.topic = opts.topic;
    this.buffer = opts.buffer;
    this.logger = opts.logger;
    this.label = opts.label;
    this.open = opts.open;
    // A full replay (capacity batches + end marker) must fit one requester's queue: the kernel may
    // take none of it before the whole reply is queued (libzmq's ROUTER would drop it silently).
    // A request is a seq of 8 bytes: anything near REPLAY_REQUEST_MAX_BYTES is refused from its header.
    this.socket = new RouterSocket({ logger: opts.logger, sendHighWaterMark: opts.buffer.capacity + 1, maxMessageBytes: REPLAY_REQUEST_MAX_BYTES });
    ({ endpoint: this.endpoint, port: this.port } = bindOrClose(this.socket, opts.host, opts.port, opts.ports));
    this.socket.onMessage(this.onRequest);
  }

  close(): void {
    this.socket.close();
  }

  private readonly onRequest = (frames: Frames): void => {
    const request = parseReplayRequest(frames);
    if ("problem" in request) return this.badRequest(request.problem);
    if (this.open && !this.open()) {
      this.ignoredRequests++;
      return;
    }
    const identity = frames[0]!;
    const socket = this.socket;
    const topic = this.topic;
    for (const [seq, payload] of this.buffer.from(request.start)) {
      if (!socket.send(replayBatchFrames(identity, topic, seq, payload))) return this.truncated(seq);
    }
    if (!socket.send(replayEndFrames(identity))) return this.truncated(REPLAY_END_SEQ);
    this.requestsServed++;
  };

  private truncated(atSeq: bigint): void {
    this.truncatedReplies++;
    this.logger.warn(`replay ${this.label}: reply cut at seq ${atSeq === REPLAY_END_SEQ ? "end marker" : atSeq}: requester gone or its queue is full (concurrent replays?); it should retry`);
  }

  private badRequest(problem: string): void {
    this.badRequests++;
    this.badSinceLog++;
    const now = performance.now();
    if (now - this.lastBadLogMs < BAD_REQUEST_LOG_INTERVAL_MS) return;
    const others = this.badSinceLog - 1;
    this.logger.warn(`replay ${this.label}: ignoring bad request: ${problem}; expected [identity, "", start_seq as 8 bytes big-endian]${others > 0 ? ` (${others} more since the last report)` : ""}`);
    this.lastBadLogMs = now;
    this.badSinceLog = 0;
  }
}

