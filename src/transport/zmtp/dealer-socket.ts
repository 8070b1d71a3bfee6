// DEALER: round-robin send over peers not at their HWM, fair-queued receive. Messages sent before
// any peer is ready wait (up to the send HWM) and go out when the first peer connects, like
// libzmq's pipe for a connect()ed endpoint.
import { SocketType } from "../../protocol/zmtp/constants.ts";
import { messageWireBytes } from "../../protocol/zmtp/encoder.ts";
import type { Connection } from "./connection.ts";
import { toFrameBytes, type Frame, type ZmtpSocketOptions } from "./options.ts";
import { ReceivingSocket } from "./receiving-socket.ts";

export class DealerSocket extends ReceivingSocket {
  readonly type = SocketType.Dealer;
  private turn = 0;
  private waiting: Uint8Array[][] = [];

  constructor(opts: ZmtpSocketOptions = {}) {
    super(opts);
  }

  /** Sends to the next peer in turn; false (dropped) when every peer is at its HWM. */
  send(frames: readonly Frame[]): boolean {
    if (this.closed || frames.length === 0) return false;
    const bytes = toFrameBytes(frames);
    const peers = this.peers;
    if (peers.length === 0) {
      if (this.waiting.length >= this.sendHighWaterMark) {
        this.dropped++;
        return false;
      }
      this.waiting.push(bytes.map((f) => f.slice()));
      return true;
    }
    const wireBytes = messageWireBytes(bytes);
    for (let i = 0; i < peers.length; i++) {
      const k = (this.turn + i) % peers.length;
      if (peers[k]!.send(bytes, 0, wireBytes)) {
        this.turn = k + 1;
        this.sent++;
        return true;
      }
    }
    this.dropped++;
    return false;
  }

  protected peerReady(_conn: Connection): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const m of waiting) this.send(m);
  }

  protected peerMessage(conn: Connection, frames: Uint8Array[]): void {
    this.deliver(conn, frames);
  }

  protected override pendingCount(): number {
    return this.waiting.length;
  }
}
