// PUB: fans each message out to the peers whose subscriptions prefix-match frame 0. A peer at its
// send HWM misses the message (counted); the publisher never blocks, as with libzmq.
import { CommandKind, decodeSubscriptionMessage, type ZmtpCommand } from "../../protocol/zmtp/commands.ts";
import { SocketType } from "../../protocol/zmtp/constants.ts";
import { messageWireBytes } from "../../protocol/zmtp/encoder.ts";
import { SubscriptionSet } from "../../protocol/zmtp/subscriptions.ts";
import type { Connection } from "./connection.ts";
import { toFrameBytes, type Frame, type ZmtpSocketOptions } from "./options.ts";
import { ZmtpSocket } from "./zmtp-socket.ts";

export class PubSocket extends ZmtpSocket {
  readonly type = SocketType.Pub;

  constructor(opts: ZmtpSocketOptions = {}) {
    super(opts);
  }

  /**
   * Queues one multipart message for every matching subscriber; synchronous, never blocks.
   * Returns how many peers it was queued for. Frames are copied; the caller may reuse them.
   */
  send(frames: readonly Frame[]): number {
    if (this.closed || frames.length === 0) return 0;
    const bytes = toFrameBytes(frames);
    const topic = bytes[0];
    const peers = this.peers;
    let wireBytes = -1;
    let queued = 0;
    for (let i = 0; i < peers.length; i++) {
      const conn = peers[i]!;
      if (!(conn.slot as SubscriptionSet).matches(topic)) continue;
      if (wireBytes < 0) wireBytes = messageWireBytes(bytes);
      if (conn.send(bytes, 0, wireBytes)) queued++;
      else this.dropped++;
    }
    this.sent += queued;
    return queued;
  }

  /** Number of peers currently subscribed to a prefix of `topic`. */
  subscriberCount(topic: Frame = ""): number {
    const t = toFrameBytes([topic])[0];
    let n = 0;
    for (const c of this.peers) if ((c.slot as SubscriptionSet).matches(t)) n++;
    return n;
  }

  protected peerReady(conn: Connection): void {
    conn.slot = new SubscriptionSet();
  }

  protected override peerCommand(conn: Connection, command: ZmtpCommand): void {
    const subs = conn.slot as SubscriptionSet;
    if (command.kind === CommandKind.Subscribe) subs.add(command.topic);
    else if (command.kind === CommandKind.Cancel) subs.remove(command.topic);
  }

  /** ZMTP 3.0 peers subscribe with messages (first byte 1/0); other messages to a PUB are ignored. */
  protected peerMessage(conn: Connection, frames: Uint8Array[]): void {
    const sub = decodeSubscriptionMessage(frames);
    if (!sub) return;
    const subs = conn.slot as SubscriptionSet;
    if (sub.subscribe) subs.add(sub.topic);
    else subs.remove(sub.topic);
  }
}
