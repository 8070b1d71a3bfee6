// Receive side of SUB/ROUTER/DEALER: either a callback (no queue, fastest) or a pull API
// (receive() / for-await) fed from per-peer queues served round-robin (libzmq's fair queueing).
// A peer whose queue reaches the receive HWM is paused at the TCP level, so a slow consumer
// pushes back on the sender instead of growing memory.
import { KvcrError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/logger.ts";
import type { Connection } from "./connection.ts";

export type Frames = Uint8Array[];
export type MessageHandler = (frames: Frames) => void;

class PeerQueue {
  items: (Frames | undefined)[] = [];
  head = 0;
  constructor(readonly conn: Connection) {}
  get length(): number {
    return this.items.length - this.head;
  }
  shift(): Frames {
    const m = this.items[this.head]!;
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return m;
  }
}

export class Inbox {
  private handler: MessageHandler | undefined;
  /** Non-empty peer queues, served in turn. */
  private active: PeerQueue[] = [];
  private turn = 0;
  private waiters: ((r: IteratorResult<Frames>) => void)[] = [];
  private closed = false;
  received = 0;

  /** A paused peer is resumed once its queue is down to half the HWM. */
  private readonly resumeAt: number;

  /** `highWaterMark` may be Infinity (no limit: a peer is never paused). */
  constructor(
    private readonly highWaterMark: number,
    private readonly logger: Logger,
  ) {
    this.resumeAt = Math.floor(highWaterMark / 2);
  }

  get queuedMessages(): number {
    let n = 0;
    for (const q of this.active) n += q.length;
    return n;
  }

  deliver(conn: Connection, frames: Frames): void {
    this.received++;
    const handler = this.handler;
    if (handler) {
      try {
        handler(frames);
      } catch (e) {
        this.logger.error(`zmtp message handler threw (message dropped): ${(e as Error).stack ?? e}`);
      }
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter) return waiter({ value: frames, done: false });
    let q = conn.inboxState as PeerQueue | undefined;
    if (!q) q = conn.inboxState = new PeerQueue(conn);
    if (q.length === 0) this.active.push(q);
    q.items.push(frames);
    if (q.length >= this.highWaterMark) conn.pauseReading();
  }

  /** Switches to callback delivery; messages already queued are handed over first, in order. */
  setHandler(handler: MessageHandler): void {
    if (this.waiters.length > 0) throw new KvcrError("ZMTP_USAGE", "cannot set onMessage while a receive() is pending; use one or the other");
    while (this.active.length > 0) {
      const m = this.take();
      try {
        handler(m);
      } catch (e) {
        this.logger.error(`zmtp message handler threw (message dropped): ${(e as Error).stack ?? e}`);
      }
    }
    this.handler = handler;
  }

  next(): Promise<IteratorResult<Frames>> {
    if (this.handler) return Promise.reject(new KvcrError("ZMTP_USAGE", "this socket delivers to onMessage; receive() is not available"));
    if (this.active.length > 0) return Promise.resolve({ value: this.take(), done: false });
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Ends pending and future pulls once the queued messages are consumed. */
  close(): void {
    this.closed = true;
    for (const w of this.waiters.splice(0)) w({ value: undefined, done: true });
  }

  private take(): Frames {
    if (this.turn >= this.active.length) this.turn = 0;
    const i = this.turn;
    const q = this.active[i]!;
    const m = q.shift();
    if (q.length === 0) this.active.splice(i, 1);
    else this.turn = i + 1;
    if (q.length <= this.resumeAt) q.conn.resumeReading();
    return m;
  }
}
