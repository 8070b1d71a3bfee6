// The replay ROUTER of one raw publisher (SPEC §4.2, as vLLM's ZmqEventPublisher._service_replay):
// request [identity, "", start_seq u64 BE] → every buffered batch with seq ≥ start as
// [identity, "", topic, seq, payload], then the end marker [identity, "", "", 0xFF×8, ""].
import type { Logger } from "../../lib/logger.ts";
import { encodeSeq, REPLAY_END_SEQ } from "../../protocol/kv-events/index.ts";
import { RouterSocket, type Frames } from "../../transport/zmtp/index.ts";
import type { PortPlan } from "../../transport/port-plan.ts";
import { bindOrClose } from "./bind.ts";
import type { ReplayBuffer } from "./replay-buffer.ts";

const EMPTY = new Uint8Array(0);
const END_SEQ_FRAME = encodeSeq(REPLAY_END_SEQ);
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
}

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
  private lastBadLogMs = -Infinity;
  private badSinceLog = 0;

  constructor(opts: ReplayServerOptions) {
    this.topic = opts.topic;
    this.buffer = opts.buffer;
    this.logger = opts.logger;
    this.label = opts.label;
    // A full replay (capacity batches + end marker) must fit one requester's queue: the kernel may
    // take none of it before the whole reply is queued (libzmq's ROUTER would drop it silently).
    this.socket = new RouterSocket({ logger: opts.logger, sendHighWaterMark: opts.buffer.capacity + 1 });
    ({ endpoint: this.endpoint, port: this.port } = bindOrClose(this.socket, opts.host, opts.port, opts.ports));
    this.socket.onMessage(this.onRequest);
  }

  close(): void {
    this.socket.close();
  }

  private readonly onRequest = (frames: Frames): void => {
    const problem = requestProblem(frames);
    if (problem !== undefined) return this.badRequest(problem);
    const identity = frames[0]!;
    const start = new DataView(frames[2]!.buffer, frames[2]!.byteOffset, 8).getBigUint64(0);
    const socket = this.socket;
    const topic = this.topic;
    for (const [seq, payload] of this.buffer.from(start)) {
      if (!socket.send([identity, EMPTY, topic, encodeSeq(seq), payload])) return this.truncated(seq);
    }
    if (!socket.send([identity, EMPTY, EMPTY, END_SEQ_FRAME, EMPTY])) return this.truncated(REPLAY_END_SEQ);
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

/** Why a ROUTER message is not a replay request, or undefined if it is one. */
export function requestProblem(frames: Frames): string | undefined {
  if (frames.length !== 3) return `${frames.length - 1} frames after the identity, expected 2`;
  if (frames[1]!.length !== 0) return `delimiter frame has ${frames[1]!.length} bytes, expected empty`;
  if (frames[2]!.length !== 8) return `start_seq frame has ${frames[2]!.length} bytes, expected 8`;
  return undefined;
}
