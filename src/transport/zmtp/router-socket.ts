// ROUTER: prepends the sending peer's identity on receive and routes by frame 0 on send. Peers
// without an identity get a generated one (0x00 + u32, as libzmq); a message to an unknown
// identity is dropped and counted (libzmq without ROUTER_MANDATORY).
import { SocketType } from "../../protocol/zmtp/constants.ts";
import { messageWireBytes } from "../../protocol/zmtp/encoder.ts";
import type { Connection } from "./connection.ts";
import { toFrameBytes, type Frame, type ZmtpSocketOptions } from "./options.ts";
import { ReceivingSocket } from "./receiving-socket.ts";

const latin1 = new TextDecoder("latin1");

interface RouterPeer {
  id: Uint8Array;
  key: string;
}

export class RouterSocket extends ReceivingSocket {
  readonly type = SocketType.Router;
  private readonly byIdentity = new Map<string, Connection>();
  private nextId = (Math.random() * 0x1_0000_0000) >>> 0;
  private unroutable = 0;

  constructor(opts: ZmtpSocketOptions = {}) {
    super(opts);
  }

  /** Sends frames[1..] to the peer whose identity is frames[0]; false if unknown or at its HWM. */
  send(frames: readonly Frame[]): boolean {
    if (this.closed || frames.length < 2) return false;
    const bytes = toFrameBytes(frames);
    const conn = this.byIdentity.get(latin1.decode(bytes[0]!));
    if (!conn) {
      this.unroutable++;
      this.dropped++;
      return false;
    }
    if (conn.send(bytes, 1, messageWireBytes(bytes, 1))) {
      this.sent++;
      return true;
    }
    this.dropped++;
    return false;
  }

  /** Identities of the connected peers. */
  peerIdentities(): Uint8Array[] {
    return this.peers.map((c) => (c.peerState as RouterPeer).id);
  }

  /** Messages dropped because no peer had the identity. */
  get unroutableMessages(): number {
    return this.unroutable;
  }

  protected peerReady(conn: Connection): void {
    let id = conn.peerIdentity;
    if (id.length === 0) id = this.generateIdentity();
    const key = latin1.decode(id);
    if (this.byIdentity.has(key)) {
      // libzmq default (no ROUTER_HANDOVER): the newcomer with a taken identity is refused.
      conn.fail(`identity ${printable(id)} is already connected`, true);
      return;
    }
    conn.peerState = { id, key } satisfies RouterPeer;
    this.byIdentity.set(key, conn);
  }

  protected override peerGone(conn: Connection): void {
    const peer = conn.peerState as RouterPeer | undefined;
    if (peer && this.byIdentity.get(peer.key) === conn) this.byIdentity.delete(peer.key);
  }

  protected peerMessage(conn: Connection, frames: Uint8Array[]): void {
    const peer = conn.peerState as RouterPeer | undefined;
    if (!peer) return;
    frames.unshift(peer.id);
    this.deliver(conn, frames);
  }

  private generateIdentity(): Uint8Array {
    for (;;) {
      const n = this.nextId;
      this.nextId = (this.nextId + 1) >>> 0;
      const id = new Uint8Array([0, n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
      if (!this.byIdentity.has(latin1.decode(id))) return id;
    }
  }
}

function printable(id: Uint8Array): string {
  return /^[\x20-\x7e]*$/.test(latin1.decode(id)) ? JSON.stringify(latin1.decode(id)) : `0x${Buffer.from(id).toString("hex")}`;
}
