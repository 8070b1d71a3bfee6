// What a server connection sends: straight to the socket while it takes it, else queued (a copy)
// and written on drain; drained() lets the response writer read a stream no faster than the client.
import type { ResponseOutput } from "./response-writer.ts";

export interface WritableSocket {
  /** Bytes taken (maybe fewer than given), or -1 when the socket is closed. */
  write(bytes: Uint8Array): number;
}

export class SocketOutput implements ResponseOutput {
  gone = false;
  /** Bytes waiting for the socket to drain. */
  queuedBytes = 0;
  /** performance.now() of the last write. */
  lastWrite = performance.now();
  private queue: Uint8Array[] = [];
  private waiters: (() => void)[] = [];

  constructor(
    private readonly socket: WritableSocket,
    /** The socket refused a write: it is closed. */
    private readonly onClosed: () => void,
  ) {}

  send(bytes: Uint8Array): boolean {
    if (this.gone) return false;
    this.lastWrite = performance.now();
    if (this.queuedBytes > 0) {
      this.keep(bytes, 0);
      return false;
    }
    const n = this.socket.write(bytes);
    if (n < 0) {
      this.onClosed();
      return false;
    }
    if (n === bytes.length) return true;
    this.keep(bytes, n);
    return false;
  }

  drained(): Promise<void> {
    if (this.queuedBytes === 0 || this.gone) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The socket takes bytes again: writes what is queued; true once nothing is left. */
  flush(): boolean {
    this.lastWrite = performance.now();
    while (this.queue.length > 0) {
      const bytes = this.queue[0]!;
      const n = this.socket.write(bytes);
      if (n < 0) {
        this.onClosed();
        return false;
      }
      this.queuedBytes -= n;
      if (n < bytes.length) {
        this.queue[0] = bytes.subarray(n);
        return false;
      }
      this.queue.shift();
    }
    this.wake();
    return true;
  }

  /** The connection is gone: nothing more is sent, and whoever waits for drain stops waiting. */
  close(): void {
    this.gone = true;
    this.queue = [];
    this.queuedBytes = 0;
    this.wake();
  }

  /** Keeps bytes[from..]: a copy, as `bytes` may be the writer's scratch buffer. */
  private keep(bytes: Uint8Array, from: number): void {
    this.queue.push(Uint8Array.prototype.slice.call(bytes, from));
    this.queuedBytes += bytes.length - from;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
