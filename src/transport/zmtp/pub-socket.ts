// PUB: fans each message out to the peers whose subscriptions prefix-match frame 0. A peer at its
// send HWM misses the message (counted); the publisher never blocks, as with libzmq. A peer's
// subscriptions are bounded (count, prefix length, and the socket's total): a peer past a bound is
// dropped and counted, so no subscriber can grow a publisher's memory or stall its loop.
import { CommandKind, decodeSubscriptionMessage, type ZmtpCommand } from "../../protocol/zmtp/commands.ts";
import { SocketType } from "../../protocol/zmtp/constants.ts";
import { messageWireBytes } from "../../protocol/zmtp/encoder.ts";
import { MESSAGE_TOO_LARGE } from "../../protocol/zmtp/parser.ts";
import { SubscriptionSet } from "../../protocol/zmtp/subscriptions.ts";
import type { Connection } from "./connection.ts";
import { toFrameBytes, type Frame, type ZmtpSocketOptions } from "./options.ts";
import { ZmtpSocket } from "./zmtp-socket.ts";

/**
 * Subscription bounds. vLLM's and Dynamo's subscribers hold one short topic each (vLLM's default
 * is ""), so these are far above any real consumer and far below what hurts a publisher.
 */
export interface SubscriptionLimits {
  /** Distinct prefixes one peer may hold. */
  maxSubscriptionsPerPeer: number;
  /** Longest prefix, in bytes. */
  maxSubscriptionBytes: number;
  /** Prefix bytes held for all peers together. */
  maxSubscriptionBytesTotal: number;
}

export const DEFAULT_SUBSCRIPTION_LIMITS: SubscriptionLimits = {
  maxSubscriptionsPerPeer: 1000,
  maxSubscriptionBytes: 256,
  maxSubscriptionBytesTotal: 4 * 1024 * 1024,
};

/** Largest frame a subscriber sends beyond its prefix: the SUBSCRIBE command's name and length byte. */
const SUBSCRIBE_FRAME_OVERHEAD = 16;
/** Room for the handshake's READY (socket type and an identity of up to 255 bytes). */
const READY_FRAME_BYTES = 512;

export interface PubSocketOptions extends ZmtpSocketOptions {
  subscriptionLimits?: Partial<SubscriptionLimits>;
}

export class PubSocket extends ZmtpSocket {
  readonly type = SocketType.Pub;
  readonly limits: SubscriptionLimits;
  /** Peers dropped for passing a subscription bound. */
  private overLimit = 0;
  private heldBytes = 0;

  constructor(opts: PubSocketOptions = {}) {
    const { subscriptionLimits, ...socketOpts } = opts;
    const limits = { ...DEFAULT_SUBSCRIPTION_LIMITS, ...subscriptionLimits };
    // A subscriber sends nothing but subscriptions, so a frame longer than the longest allowed one
    // is refused by the parser from its header, before a byte of it is buffered.
    const frameCap = Math.max(limits.maxSubscriptionBytes + SUBSCRIBE_FRAME_OVERHEAD, READY_FRAME_BYTES);
    super({ ...socketOpts, maxMessageBytes: Math.min(socketOpts.maxMessageBytes ?? frameCap, frameCap) });
    this.limits = limits;
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
      if (!(conn.peerState as SubscriptionSet).matches(topic)) continue;
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
    for (const c of this.peers) if ((c.peerState as SubscriptionSet).matches(t)) n++;
    return n;
  }

  /** Peers dropped for passing a subscription bound (count, prefix length, the socket's total). */
  get peersOverSubscriptionLimits(): number {
    return this.overLimit;
  }

  /** Prefix bytes held for all peers (bounded by maxSubscriptionBytesTotal). */
  get subscriptionBytes(): number {
    return this.heldBytes;
  }

  protected peerReady(conn: Connection): void {
    conn.peerState = new SubscriptionSet();
  }

  protected override peerGone(conn: Connection): void {
    this.heldBytes -= (conn.peerState as SubscriptionSet).bytes;
  }

  protected override peerCommand(conn: Connection, command: ZmtpCommand): void {
    if (command.kind === CommandKind.Subscribe) this.subscribe(conn, command.topic);
    else if (command.kind === CommandKind.Cancel) this.cancel(conn, command.topic);
  }

  /** ZMTP 3.0 peers subscribe with messages (first byte 1/0); other messages to a PUB are ignored. */
  protected peerMessage(conn: Connection, frames: Uint8Array[]): void {
    const sub = decodeSubscriptionMessage(frames);
    if (!sub) return;
    if (sub.subscribe) this.subscribe(conn, sub.topic);
    else this.cancel(conn, sub.topic);
  }

  override connectionClosed(conn: Connection, reason: string | undefined): void {
    // The parser refused a frame longer than any allowed subscription.
    if (reason?.includes(MESSAGE_TOO_LARGE)) this.overLimit++;
    super.connectionClosed(conn, reason);
  }

  private subscribe(conn: Connection, prefix: Uint8Array): void {
    const subs = conn.peerState as SubscriptionSet;
    const { maxSubscriptionsPerPeer, maxSubscriptionBytes, maxSubscriptionBytesTotal } = this.limits;
    let broken: string | undefined;
    if (prefix.length > maxSubscriptionBytes) broken = `a ${prefix.length}-byte subscription (at most ${maxSubscriptionBytes})`;
    else if (subs.size >= maxSubscriptionsPerPeer && !subs.has(prefix)) broken = `more than ${maxSubscriptionsPerPeer} subscriptions`;
    else if (this.heldBytes + prefix.length > maxSubscriptionBytesTotal && !subs.has(prefix)) broken = `subscriptions past the publisher's ${maxSubscriptionBytesTotal} bytes for all subscribers`;
    if (broken !== undefined) {
      this.overLimit++;
      conn.fail(`subscription bound: ${broken}`, true);
      return;
    }
    if (subs.add(prefix)) this.heldBytes += prefix.length;
  }

  private cancel(conn: Connection, prefix: Uint8Array): void {
    if ((conn.peerState as SubscriptionSet).remove(prefix)) this.heldBytes -= prefix.length;
  }
}
