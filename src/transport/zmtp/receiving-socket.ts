// Shared receive API of SUB, ROUTER and DEALER: onMessage(callback) for the hot path, or
// receive() / for-await with fair-queued per-peer buffers bounded by the receive HWM.
import { KvcrError } from "../../lib/errors.ts";
import type { Connection } from "./connection.ts";
import { Inbox, type Frames, type MessageHandler } from "./inbox.ts";
import { hwmLimit, type ZmtpSocketOptions } from "./options.ts";
import { ZmtpSocket } from "./zmtp-socket.ts";

export abstract class ReceivingSocket extends ZmtpSocket implements AsyncIterable<Frames> {
  protected readonly inbox: Inbox;

  constructor(opts: ZmtpSocketOptions = {}) {
    super(opts);
    this.inbox = new Inbox(hwmLimit(this.options.receiveHighWaterMark), this.logger);
  }

  /** Delivers every message to `handler` synchronously as it is parsed (no queue, no promises). */
  onMessage(handler: MessageHandler): void {
    this.inbox.setHandler(handler);
  }

  /** Next message; rejects with ZMTP_CLOSED once the socket is closed and the queue is empty. */
  async receive(): Promise<Frames> {
    const r = await this.inbox.next();
    if (r.done) throw new KvcrError("ZMTP_CLOSED", `zmtp ${this.type} socket is closed`);
    return r.value;
  }

  [Symbol.asyncIterator](): AsyncIterator<Frames> {
    return { next: () => this.inbox.next() };
  }

  protected deliver(conn: Connection, frames: Frames): void {
    this.inbox.deliver(conn, frames);
  }

  protected override receivedCount(): number {
    return this.inbox.received;
  }

  protected override onClose(): void {
    this.inbox.close();
  }
}
