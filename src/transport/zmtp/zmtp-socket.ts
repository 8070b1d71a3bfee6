// Base of every socket type: bind/unbind (Bun.listen), connect/disconnect (reconnecting dialers),
// the set of handshaken peers, counters and close(). Subclasses add the routing behaviour.
import type { TCPSocketListener } from "bun";
import { bindFailed } from "../bind-error.ts";
import { KvcrError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/logger.ts";
import type { ZmtpCommand } from "../../protocol/zmtp/commands.ts";
import { MAX_IDENTITY_BYTES, type SocketType } from "../../protocol/zmtp/constants.ts";
import { socketHandlers, type Connection, type ConnectionOwner, type ListenContext, type SocketData } from "./connection.ts";
import { Dialer } from "./dialer.ts";
import { formatEndpoint, parseEndpoint } from "../../protocol/zmtp/endpoint.ts";
import { DEFAULT_OPTIONS, defaultLogger, hwmLimit, toBytes, type ResolvedOptions, type ZmtpSocketOptions } from "./options.ts";

export interface ZmtpSocketStats {
  /** Peers that finished the handshake. */
  peers: number;
  /** Message copies queued to peers (a PUB message to 3 subscribers counts 3). */
  messagesSent: number;
  /** Messages refused: peer at its send HWM, unknown ROUTER identity, or no DEALER peer and full queue. */
  messagesDropped: number;
  messagesReceived: number;
  /** Messages waiting in user space for slow peers (bounded by peers × sendHighWaterMark). */
  queuedMessages: number;
  /** Peers disconnected for a protocol violation or handshake failure. */
  peerErrors: number;
}

export abstract class ZmtpSocket implements ConnectionOwner, Disposable, AsyncDisposable {
  abstract readonly type: SocketType;
  readonly logger: Logger;
  readonly identity: Uint8Array | undefined;
  /** Per-peer send queue limit in messages (Infinity when the option is 0). */
  readonly sendHighWaterMark: number;
  readonly maxMessageBytes: number;
  readonly handshakeTimeoutMs: number;
  protected readonly options: ResolvedOptions;
  /** Handshaken peers, in the order they became ready. */
  protected peers: Connection[] = [];
  private readonly connections = new Set<Connection>();
  private readonly listeners = new Map<string, TCPSocketListener<SocketData>>();
  private dialers: Dialer[] = [];
  private connectedWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  protected closed = false;
  protected sent = 0;
  protected dropped = 0;
  private peerErrors = 0;
  private peerDropped: ((reason: string) => void) | undefined;

  constructor(opts: ZmtpSocketOptions = {}) {
    this.options = { ...DEFAULT_OPTIONS, ...definedOnly(opts) };
    for (const [key, value] of Object.entries(this.options)) {
      if (!Number.isInteger(value) || value < (key === "reconnectIntervalMs" ? 1 : 0)) {
        throw new KvcrError("ZMTP_OPTION_INVALID", `zmtp option ${key}=${value} must be a non-negative integer`);
      }
    }
    this.logger = opts.logger ?? defaultLogger();
    this.identity = opts.identity === undefined ? undefined : toBytes(opts.identity);
    if (this.identity && this.identity.length > MAX_IDENTITY_BYTES) {
      throw new KvcrError("ZMTP_OPTION_INVALID", `zmtp identity of ${this.identity.length} bytes exceeds ${MAX_IDENTITY_BYTES}`);
    }
    this.sendHighWaterMark = hwmLimit(this.options.sendHighWaterMark);
    this.maxMessageBytes = this.options.maxMessageBytes;
    this.handshakeTimeoutMs = this.options.handshakeTimeoutMs;
  }

  /** Listens on `tcp://HOST:PORT` (port 0 or * = ephemeral); returns the actual endpoint. */
  bind(endpoint: string): string {
    this.assertOpen();
    const address = parseEndpoint(endpoint, "bind");
    const context: ListenContext = { owner: this };
    let listener: TCPSocketListener<SocketData>;
    try {
      listener = Bun.listen<SocketData>({ hostname: address.host, port: address.port, data: context, socket: socketHandlers });
    } catch (e) {
      throw bindFailed("ZMTP_BIND_FAILED", `bind ZeroMQ ${this.type}`, address.host, address.port, e);
    }
    const actual = formatEndpoint(address.host, listener.port);
    this.listeners.set(actual, listener);
    return actual;
  }

  /** Stops listening on an endpoint returned by bind() and drops the peers accepted there. */
  unbind(endpoint: string): void {
    const listener = this.listeners.get(endpoint);
    if (!listener) throw new KvcrError("ZMTP_USAGE", `${endpoint} is not bound by this socket (bound: ${[...this.listeners.keys()].join(", ") || "none"})`);
    this.listeners.delete(endpoint);
    listener.stop(true);
  }

  /** Connects to `tcp://HOST:PORT` in the background and keeps reconnecting until disconnect/close. */
  connect(endpoint: string): void {
    this.assertOpen();
    const address = parseEndpoint(endpoint, "connect");
    const dialer = new Dialer(endpoint, address, this, this.options.reconnectIntervalMs, this.options.reconnectIntervalMaxMs, this.logger);
    this.dialers.push(dialer);
    dialer.start();
  }

  disconnect(endpoint: string): void {
    const mine = this.dialers.filter((d) => d.endpoint === endpoint);
    if (mine.length === 0) throw new KvcrError("ZMTP_USAGE", `${endpoint} is not connected by this socket`);
    this.dialers = this.dialers.filter((d) => d.endpoint !== endpoint);
    for (const d of mine) d.stop();
  }

  /** Bound endpoints (actual ports). */
  get endpoints(): string[] {
    return [...this.listeners.keys()];
  }

  get peerCount(): number {
    return this.peers.length;
  }

  /** Resolves once at least one peer has finished the handshake (at once if one has); rejects on close. */
  connected(): Promise<void> {
    if (this.peers.length > 0) return Promise.resolve();
    if (this.closed) return Promise.reject(this.closedError());
    return new Promise((resolve, reject) => this.connectedWaiters.push({ resolve, reject }));
  }

  stats(): ZmtpSocketStats {
    let queued = 0;
    for (const c of this.peers) queued += c.out.queuedMessages;
    return {
      peers: this.peers.length,
      messagesSent: this.sent,
      messagesDropped: this.dropped,
      messagesReceived: this.receivedCount(),
      queuedMessages: queued + this.pendingCount(),
      peerErrors: this.peerErrors,
    };
  }

  /**
   * Ends everything this socket owns: dialers and their timers, listeners, connections. Bytes
   * already queued are offered to the kernel once; what it does not take is dropped (linger 0).
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const d of this.dialers) d.stop();
    this.dialers = [];
    for (const c of [...this.connections]) c.close();
    for (const listener of this.listeners.values()) listener.stop(true);
    this.listeners.clear();
    for (const w of this.connectedWaiters.splice(0)) w.reject(this.closedError());
    this.onClose();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }

  // ---- ConnectionOwner ----

  connectionOpened(conn: Connection): void {
    this.connections.add(conn);
  }

  connectionReady(conn: Connection): void {
    if (this.closed) return conn.close();
    this.peers.push(conn);
    (conn.origin as Dialer | undefined)?.connected();
    this.peerReady(conn);
    if (!conn.closed) for (const w of this.connectedWaiters.splice(0)) w.resolve();
  }

  connectionMessage(conn: Connection, frames: Uint8Array[]): void {
    this.peerMessage(conn, frames);
  }

  connectionCommand(conn: Connection, command: ZmtpCommand): void {
    this.peerCommand(conn, command);
  }

  /** Called with the reason each time a peer is dropped for an error (a protocol fault, a message over the size limit). */
  onPeerDropped(hook: (reason: string) => void): void {
    this.peerDropped = hook;
  }

  connectionClosed(conn: Connection, reason: string | undefined): void {
    this.connections.delete(conn);
    if (reason !== undefined) {
      this.peerErrors++;
      this.peerDropped?.(reason);
    }
    const i = this.peers.indexOf(conn);
    if (i >= 0) {
      this.peers.splice(i, 1);
      this.peerGone(conn, i);
    }
    const origin = conn.origin as Dialer | undefined;
    if (origin && !this.closed) origin.disconnected(conn);
  }

  // ---- subclass hooks ----

  protected abstract peerReady(conn: Connection): void;
  protected peerGone(_conn: Connection, _index: number): void {}
  protected abstract peerMessage(conn: Connection, frames: Uint8Array[]): void;
  protected peerCommand(_conn: Connection, _command: ZmtpCommand): void {}
  protected receivedCount(): number {
    return 0;
  }
  protected pendingCount(): number {
    return 0;
  }
  protected onClose(): void {}

  protected assertOpen(): void {
    if (this.closed) throw this.closedError();
  }

  private closedError(): KvcrError {
    return new KvcrError("ZMTP_CLOSED", `zmtp ${this.type} socket is closed`);
  }
}

function definedOnly(opts: ZmtpSocketOptions): Partial<ResolvedOptions> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(opts)) if (v !== undefined && k !== "logger" && k !== "identity") out[k] = v;
  return out as Partial<ResolvedOptions>;
}
