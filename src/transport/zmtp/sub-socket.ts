// SUB: subscribes by prefix on every publisher it is connected to (re-sent after each reconnect),
// and filters locally too, as libzmq does, so nothing unsubscribed leaks through in flight.
import { SocketType } from "../../protocol/zmtp/constants.ts";
import { encodeSubscriptionFor } from "../../protocol/zmtp/encoder.ts";
import { SubscriptionSet } from "../../protocol/zmtp/subscriptions.ts";
import type { Connection } from "./connection.ts";
import { toBytes, type Frame, type ZmtpSocketOptions } from "./options.ts";
import { ReceivingSocket } from "./receiving-socket.ts";

export class SubSocket extends ReceivingSocket {
  readonly type = SocketType.Sub;
  private readonly subscriptions = new SubscriptionSet();

  constructor(opts: ZmtpSocketOptions = {}) {
    super(opts);
  }

  /** Receives messages whose frame 0 starts with `prefix` ("" = everything). */
  subscribe(prefix: Frame = ""): void {
    const topic = toBytes(prefix);
    if (this.subscriptions.add(topic)) this.tellPeers(topic, true);
  }

  unsubscribe(prefix: Frame = ""): void {
    const topic = toBytes(prefix);
    if (this.subscriptions.remove(topic)) this.tellPeers(topic, false);
  }

  protected peerReady(conn: Connection): void {
    for (const topic of this.subscriptions.topics()) conn.sendRaw(encodeSubscriptionFor(conn.peerMinor, topic, true));
  }

  protected peerMessage(conn: Connection, frames: Uint8Array[]): void {
    if (this.subscriptions.matches(frames[0])) this.deliver(conn, frames);
  }

  private tellPeers(topic: Uint8Array, subscribe: boolean): void {
    for (const conn of this.peers) conn.sendRaw(encodeSubscriptionFor(conn.peerMinor, topic, subscribe));
  }
}
