// Per-connection send queue: messages are encoded straight into one coalescing buffer that is
// written once per tick (or at 64 KiB); what the kernel refuses waits in a backlog until `drain`.
// The high-water mark counts messages not yet accepted by the kernel, as libzmq's pipe HWM does.
import { endOfTick } from "../../lib/end-of-tick.ts";
import { writeMessage } from "../../protocol/zmtp/encoder.ts";

/** Where bytes go: returns how many were accepted, -1 when the socket is gone. */
export interface ByteSink {
  write(bytes: Uint8Array): number;
}

/** Write at once when this much is buffered, else at the end of the tick. */
const FLUSH_AT_BYTES = 64 * 1024;
const INITIAL_BUFFER_BYTES = 8 * 1024;
/** A buffer grown for a large message is not kept for the connection's lifetime. */
const MAX_RETAINED_BUFFER_BYTES = 256 * 1024;

interface Pending {
  bytes: Uint8Array;
  messages: number;
}

// One microtask flushes every queue that was written to during the current tick.
const flushAtTickEnd = endOfTick((q: OutboundQueue) => q.flushScheduledWork());

export class OutboundQueue {
  /** Messages accepted by send() and not yet handed to the kernel. */
  queuedMessages = 0;
  private buf: Uint8Array | undefined;
  private len = 0;
  private bufMessages = 0;
  private spareBytes = INITIAL_BUFFER_BYTES;
  private backlog: (Pending | undefined)[] = [];
  private head = 0;
  private dead = false;
  private isScheduled = false;

  constructor(
    private readonly sink: ByteSink,
    private readonly highWaterMark: number,
  ) {}

  /** True while the kernel refuses bytes and we wait for `drain`. */
  get blocked(): boolean {
    return this.head < this.backlog.length;
  }

  /** Queues frames[start..] as one message; false (dropped) at the high-water mark. */
  pushMessage(frames: readonly Uint8Array[], start: number, wireBytes: number): boolean {
    if (this.queuedMessages >= this.highWaterMark || this.dead) return false;
    this.reserve(wireBytes);
    this.len = writeMessage(frames, this.buf!, this.len, start);
    this.bufMessages++;
    this.queuedMessages++;
    if (this.len >= FLUSH_AT_BYTES) this.flush();
    else this.schedule();
    return true;
  }

  /** Control bytes (greeting, commands): never counted against the HWM, never dropped. */
  pushRaw(bytes: Uint8Array): void {
    if (this.dead) return;
    this.reserve(bytes.length);
    this.buf!.set(bytes, this.len);
    this.len += bytes.length;
    this.schedule();
  }

  /** Hands buffered bytes to the kernel now (or to the backlog while blocked). */
  flush(): void {
    if (this.len === 0 || this.dead) return;
    const chunk = this.buf!.subarray(0, this.len);
    if (this.blocked) return this.toBacklog(chunk);
    const written = this.sink.write(chunk);
    if (written === chunk.length) {
      this.queuedMessages -= this.bufMessages;
      this.len = 0;
      this.bufMessages = 0;
      if (this.buf!.length > MAX_RETAINED_BUFFER_BYTES) this.buf = undefined;
      return;
    }
    if (written < 0) return this.kill();
    this.toBacklog(chunk.subarray(written));
  }

  /** The socket can take bytes again: write the backlog in order, then the coalescing buffer. */
  drain(): void {
    while (this.head < this.backlog.length) {
      const p = this.backlog[this.head]!;
      const written = this.sink.write(p.bytes);
      if (written < 0) return this.kill();
      if (written < p.bytes.length) {
        p.bytes = p.bytes.subarray(written);
        return;
      }
      this.queuedMessages -= p.messages;
      this.backlog[this.head++] = undefined;
    }
    this.backlog = [];
    this.head = 0;
    this.flush();
  }

  /** Drops everything (the connection is gone); later pushes are ignored. */
  kill(): void {
    this.dead = true;
    this.buf = undefined;
    this.backlog = [];
    this.head = 0;
    this.len = 0;
    this.bufMessages = 0;
    this.queuedMessages = 0;
  }

  /** Called by the tick flusher. */
  flushScheduledWork(): void {
    this.isScheduled = false;
    this.flush();
  }

  private schedule(): void {
    if (this.isScheduled) return;
    this.isScheduled = true;
    flushAtTickEnd(this);
  }

  private toBacklog(bytes: Uint8Array): void {
    this.backlog.push({ bytes, messages: this.bufMessages });
    this.spareBytes = this.buf!.length;
    this.buf = undefined;
    this.len = 0;
    this.bufMessages = 0;
  }

  /** Makes room for n more bytes: grow while coalescing, else flush first. */
  private reserve(n: number): void {
    const buf = this.buf;
    if (buf && this.len + n <= buf.length) return;
    if (buf && this.len > 0 && this.len + n <= 2 * FLUSH_AT_BYTES) {
      // Doubling, but never past what a flush needs (FLUSH_AT_BYTES plus this message): a buffer
      // moved to the backlog of a stalled peer holds ~64 KiB of messages, not 128 KiB of capacity
      // half used (a subscriber stopped at the HWM pinned twice its queue's bytes).
      const grown = new Uint8Array(Math.max(this.len + n, Math.min(buf.length * 2, FLUSH_AT_BYTES + n)));
      grown.set(buf.subarray(0, this.len));
      this.buf = grown;
      return;
    }
    if (this.len > 0) this.flush();
    if (this.buf && this.len + n <= this.buf.length) return;
    // len is 0 here: the old buffer was written out or moved to the backlog.
    this.buf = new Uint8Array(Math.max(INITIAL_BUFFER_BYTES, Math.min(this.spareBytes, 2 * FLUSH_AT_BYTES), n));
  }
}
