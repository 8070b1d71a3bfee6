// A Bun TCP socket's writes in order: what the kernel did not take waits for `drain`.
import type { Socket } from "bun";

export class SocketWriter {
  private pending: Uint8Array[] = [];
  private endAfterFlush = false;

  constructor(private readonly socket: Socket<unknown>) {}

  write(bytes: Uint8Array): void {
    if (this.pending.length > 0) {
      this.pending.push(bytes);
      return;
    }
    const n = this.socket.write(bytes);
    if (n < bytes.length) this.pending.push(bytes.subarray(Math.max(n, 0)));
  }

  /** Call from the socket's drain handler. */
  drain(): void {
    while (this.pending.length > 0) {
      const head = this.pending[0]!;
      const n = this.socket.write(head);
      if (n < head.length) {
        this.pending[0] = head.subarray(Math.max(n, 0));
        return;
      }
      this.pending.shift();
    }
    if (this.endAfterFlush) this.socket.end();
  }

  /** Ends the socket once everything written has gone. */
  end(): void {
    this.endAfterFlush = true;
    if (this.pending.length === 0) this.socket.end();
  }
}

/** Appends a chunk to a parse buffer (the unparsed tail of earlier chunks). */
export function append(buf: Uint8Array, chunk: Uint8Array): Uint8Array {
  if (buf.length === 0) return chunk.slice();
  const out = new Uint8Array(buf.length + chunk.length);
  out.set(buf);
  out.set(chunk, buf.length);
  return out;
}
