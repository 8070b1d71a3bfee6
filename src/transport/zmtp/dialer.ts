// Keeps one connect()ed endpoint connected: dials, and after a failure or a disconnect dials
// again after 100 ms, doubling per failed attempt up to 5 s (reset once a handshake succeeds).
// The first failed dial of each outage is a warning with its reason; the retries are debug.
import type { Logger } from "../../lib/logger.ts";
import { Connection, socketHandlers, type ConnectionOrigin, type ConnectionOwner, type SocketData } from "./connection.ts";
import type { TcpEndpoint } from "../../protocol/zmtp/endpoint.ts";

/** Delay before reconnect attempt n+1 after n consecutive failures: min·2ⁿ capped at max. */
export function reconnectDelayMs(failures: number, minMs: number, maxMs: number): number {
  return Math.min(maxMs, minMs * 2 ** Math.min(failures, 30));
}

export class Dialer implements ConnectionOrigin {
  stopped = false;
  private conn: Connection | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private failures = 0;
  /** A failed dial was already reported at warn since the last successful handshake. */
  private warned = false;

  constructor(
    readonly endpoint: string,
    private readonly address: TcpEndpoint,
    private readonly owner: ConnectionOwner,
    private readonly minDelayMs: number,
    private readonly maxDelayMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.dial();
  }

  /** Handshake done: the next disconnect retries after the base interval again. */
  connected(): void {
    this.failures = 0;
    this.warned = false;
  }

  disconnected(conn: Connection): void {
    if (this.conn === conn) this.conn = undefined;
    this.retry();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.conn?.close();
    this.conn = undefined;
  }

  private dial(): void {
    this.timer = undefined;
    if (this.stopped) return;
    const conn = new Connection(this.owner, this);
    this.conn = conn;
    Bun.connect<SocketData>({ hostname: this.address.host, port: this.address.port, data: conn, socket: socketHandlers }).catch(
      (error: Error & { code?: string }) => {
        if (this.conn === conn) this.conn = undefined;
        const code = error.code && !error.message.includes(error.code) ? ` (${error.code})` : "";
        const line = `zmtp ${this.owner.type}: connect to ${this.endpoint} failed: ${error.message}${code}`;
        if (this.warned) this.logger.debug(line);
        else if (!this.stopped) {
          this.warned = true;
          this.logger.warn(`${line}; retrying (further failures are logged at debug until a connect succeeds)`);
        }
        this.retry();
      },
    );
  }

  private retry(): void {
    if (this.stopped || this.timer) return;
    const delayMs = reconnectDelayMs(this.failures, this.minDelayMs, this.maxDelayMs);
    this.failures++;
    this.timer = setTimeout(() => this.dial(), delayMs);
  }
}
