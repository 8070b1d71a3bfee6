// One ZMTP connection over a Bun TCP socket: sends greeting + READY, runs the parser, checks the
// peer's socket type, answers PING, enforces the handshake timeout, and closes itself (with a
// logged reason) on any protocol violation. Messages and subscriptions go to the owning socket.
import type { Socket, SocketHandler } from "bun";
import type { Logger } from "../../lib/logger.ts";
import { CommandKind, type ZmtpCommand } from "../../protocol/zmtp/commands.ts";
import { isCompatiblePeer, type SocketType } from "../../protocol/zmtp/constants.ts";
import { concat, encodeError, encodeGreeting, encodePong, encodeReady } from "../../protocol/zmtp/encoder.ts";
import { ZmtpParser, type Greeting, type ZmtpParserHandler } from "../../protocol/zmtp/parser.ts";
import { OutboundQueue } from "./outbound-queue.ts";

/** What a connection needs from the socket that owns it. */
export interface ConnectionOwner {
  readonly type: SocketType;
  readonly identity: Uint8Array | undefined;
  readonly logger: Logger;
  readonly sendHighWaterMark: number;
  readonly maxMessageBytes: number;
  readonly handshakeTimeoutMs: number;
  connectionOpened(conn: Connection): void;
  connectionReady(conn: Connection): void;
  connectionMessage(conn: Connection, frames: Uint8Array[]): void;
  connectionCommand(conn: Connection, command: ZmtpCommand): void;
  connectionClosed(conn: Connection, reason: string | undefined): void;
}

/** Marks a connection made by connect(), so its closing triggers a reconnect. */
export interface ConnectionOrigin {
  readonly stopped: boolean;
}

/** Data of a listening socket; each accepted socket replaces it with its Connection in `open`. */
export interface ListenContext {
  readonly owner: ConnectionOwner;
}

export type SocketData = Connection | ListenContext;
const EMPTY = new Uint8Array(0);

export class Connection implements ZmtpParserHandler {
  socket: Socket<SocketData> | undefined;
  readonly out: OutboundQueue;
  private readonly parser: ZmtpParser;
  ready = false;
  closed = false;
  peerSocketType = "";
  peerIdentity: Uint8Array = EMPTY;
  /** ZMTP minor version the peer announced (0 → it wants message-form subscriptions). */
  peerMinor = 1;
  remote = "?";
  /** Per-socket-type state, set by the owner (routing id for ROUTER, subscriptions for PUB, ...). */
  peerState: unknown;
  /** Receive-queue bookkeeping owned by the Inbox. */
  inboxState: unknown;
  private readingPaused = false;
  private closeReason: string | undefined;
  private handshakeTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly owner: ConnectionOwner,
    readonly origin: ConnectionOrigin | undefined,
  ) {
    this.out = new OutboundQueue(this, owner.sendHighWaterMark);
    this.parser = new ZmtpParser(this, { maxMessageBytes: owner.maxMessageBytes });
  }

  /** Socket is open: greet, announce READY, start the handshake clock. */
  attach(socket: Socket<SocketData>): void {
    if (this.closed || this.origin?.stopped) {
      // close()/disconnect() ran while Bun.connect was in flight: this Connection is already
      // closed and accounted for, so only the late TCP socket is left to end (else it leaks and
      // keeps the process alive).
      socket.end();
      return;
    }
    this.socket = socket;
    this.remote = `${socket.remoteAddress}:${socket.remotePort}`;
    this.owner.connectionOpened(this);
    socket.setNoDelay(true);
    this.out.pushRaw(concat([encodeGreeting(), encodeReady(this.owner.type, this.owner.identity)]));
    this.out.flush();
    this.handshakeTimer = setTimeout(() => this.fail(`no ZMTP handshake within ${this.owner.handshakeTimeoutMs} ms`), this.owner.handshakeTimeoutMs);
  }

  /** ByteSink for the outbound queue. */
  write(bytes: Uint8Array): number {
    const socket = this.socket;
    return socket && !this.closed ? socket.write(bytes) : -1;
  }

  send(frames: readonly Uint8Array[], start: number, wireBytes: number): boolean {
    return this.out.pushMessage(frames, start, wireBytes);
  }

  sendRaw(bytes: Uint8Array): void {
    this.out.pushRaw(bytes);
  }

  onData(chunk: Uint8Array): void {
    if (this.closed) return;
    let error;
    try {
      error = this.parser.feed(chunk);
    } catch (e) {
      // A bug in a handler must not take the process down: drop this peer only.
      this.fail(`internal error while handling peer data: ${(e as Error).stack ?? e}`);
      return;
    }
    if (error) this.fail(error.message);
  }

  pauseReading(): void {
    if (this.readingPaused || this.closed) return;
    this.readingPaused = true;
    this.socket?.pause();
  }

  resumeReading(): void {
    if (!this.readingPaused || this.closed) return;
    this.readingPaused = false;
    this.socket?.resume();
  }

  /** Drops the peer with a logged reason; optionally tells it why with an ERROR command. */
  fail(reason: string, tellPeer = false): void {
    if (this.closed) return;
    this.closeReason = reason;
    this.owner.logger.warn(`zmtp ${this.owner.type}: disconnecting peer ${this.remote}: ${reason}`);
    if (tellPeer) this.out.pushRaw(encodeError(reason));
    this.close();
  }

  /** Flushes what the kernel takes now, then closes. */
  close(): void {
    if (this.closed) return;
    this.parser.halt();
    this.out.flush();
    const socket = this.socket;
    if (socket) socket.end();
    // Bun reports the close synchronously from end(); this covers a socket that never opened.
    this.onSocketClosed();
  }

  onSocketClosed(): void {
    if (this.closed) return;
    this.closed = true;
    this.ready = false;
    this.parser.halt();
    this.out.kill();
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = undefined;
    this.owner.connectionClosed(this, this.closeReason);
  }

  // ---- parser events ----

  greeting(greeting: Greeting): void {
    this.peerMinor = greeting.major > 3 ? 1 : greeting.minor;
  }

  command(command: ZmtpCommand): void {
    switch (command.kind) {
      case CommandKind.Ready:
        if (!isCompatiblePeer(this.owner.type, command.socketType)) {
          this.fail(`peer socket type ${command.socketType} cannot talk to ${this.owner.type}`, true);
          return;
        }
        this.peerSocketType = command.socketType;
        this.peerIdentity = command.identity.slice();
        if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
        this.handshakeTimer = undefined;
        this.ready = true;
        this.owner.connectionReady(this);
        return;
      case CommandKind.Error:
        this.fail(`peer sent ERROR "${command.reason}"`);
        return;
      case CommandKind.Ping:
        this.out.pushRaw(encodePong(command.context));
        return;
      case CommandKind.Pong:
        return;
      case CommandKind.Unknown:
        this.owner.logger.debug(`zmtp ${this.owner.type}: ignoring unknown command ${command.name} from ${this.remote}`);
        return;
      default:
        this.owner.connectionCommand(this, command);
    }
  }

  message(frames: Uint8Array[]): void {
    this.owner.connectionMessage(this, frames);
  }
}

/** Shared Bun socket handlers: every socket's `data` is its Connection (or the listen context). */
const handlers: SocketHandler<SocketData, "uint8array"> = {
  binaryType: "uint8array",
  open(socket) {
    const data = socket.data;
    if (data instanceof Connection) return data.attach(socket);
    const conn = new Connection(data.owner, undefined);
    socket.data = conn;
    conn.attach(socket);
  },
  data(socket, chunk) {
    (socket.data as Connection).onData(chunk);
  },
  drain(socket) {
    (socket.data as Connection).out.drain();
  },
  close(socket) {
    const data = socket.data;
    if (data instanceof Connection) data.onSocketClosed();
  },
  error(socket, error) {
    const data = socket.data;
    if (data instanceof Connection) data.fail(`socket error: ${error.message}`);
  },
};

// Bun.listen/Bun.connect are typed for the default "buffer" binary type only; plain Uint8Array
// chunks are what the parser wants (no Buffer wrapper per chunk), so widen the type here.
export const socketHandlers = handlers as unknown as SocketHandler<SocketData>;
