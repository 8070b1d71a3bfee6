// The prefill process's bootstrap ports (one per worker, --bootstrap-ports), Source side of Dynamo's
// KV hand-over (protocol/dynamo/bootstrap.ts has the exchange): a decode worker registers for a
// room, learns once the prefill holds the KV (bootstrap-rooms.ts), reserves and activates its side,
// and is told "Complete"; the held blocks are then freed. A decode that breaks the exchange, goes
// away or waits past the rendezvous timeout is logged and counted, and its blocks are freed.
import { encodeHandoffFrame, HandoffReader, messageName, type HandoffFrame, type HandoffIdentity } from "../../../protocol/dynamo/bootstrap.ts";
import type { Logger } from "../../../lib/logger.ts";
import { bindFailed } from "../../../transport/bind-error.ts";
import { listenTcp, type TcpConnection, type TcpListener } from "../../../transport/tcp/tcp.ts";
import type { BootstrapRooms, RoomOutcome } from "./bootstrap-rooms.ts";

export interface HandoffStats {
  /** Hand-overs that reached "Complete". */
  handedOver: number;
  /** Decodes whose prefill ended without its KV. */
  aborted: number;
  /** Decodes that waited past the rendezvous timeout. */
  timedOut: number;
  /** Exchanges broken off: a protocol error or the decode going away. */
  failed: number;
}

export interface HandoffSourceOptions {
  rooms: BootstrapRooms;
  stats: HandoffStats;
  logger: Logger;
  /** What SourceHeld tells the decode about timing the pull (Dynamo's `transfer_timing`; bandwidth null: the decode's own). */
  timing: { mode: string; kvBytesPerToken: number; bandwidthGbS: number | null };
}

type Step = "register" | "waiting" | "reserve" | "reserved" | "activate" | "done";

const field = (message: unknown, name: string): Record<string, unknown> | undefined => {
  const v = typeof message === "object" && message !== null ? (message as Record<string, unknown>)[name] : undefined;
  return typeof v === "object" && v !== null ? (v as Record<string, unknown>) : undefined;
};

class SourceExchange {
  private step: Step = "register";
  private readonly reader = new HandoffReader(true);
  private identity: HandoffIdentity | undefined;
  private held: (RoomOutcome & { kind: "held" }) | undefined;

  constructor(
    private readonly conn: TcpConnection,
    private readonly port: number,
    private readonly o: HandoffSourceOptions,
  ) {}

  data(chunk: Uint8Array): void {
    if (this.step === "done") return;
    const read = this.reader.push(chunk);
    if (!read.ok) return this.fail(read.problem);
    for (const frame of read.frames) if ((this.step as Step) !== "done") this.onFrame(frame);
  }

  closed(): void {
    if (this.step === "done") return;
    if (this.step !== "register") this.fail("the decode worker closed the connection before the hand-over completed");
    this.step = "done";
  }

  private onFrame(f: HandoffFrame): void {
    const m = f.message;
    const name = messageName(m);
    if (this.step === "register") {
      const reg = field(m, "Register");
      if (reg === undefined || reg.role !== "Destination") return this.fail(`expected Register{role: Destination} first, got ${name}`);
      this.identity = f.identity;
      this.step = "waiting";
      this.send("Registered");
      void this.o.rooms.decodeArrived(f.identity.bootstrap_room).then((outcome) => this.settled(outcome));
      return;
    }
    const ack = field(m, "ActionAck");
    if (this.step === "reserve" && ack?.action_id === 1 && ack.outcome === "Accepted") return void (this.step = "reserved");
    if (this.step === "reserved" && field(field(m, "Fact"), "DestinationReserved")) {
      this.step = "activate";
      return this.send({ Action: { id: 3, action: { ActivateDestination: { handoff_id: this.identity!.handoff_id } } } });
    }
    if (this.step === "activate" && ack?.action_id === 3 && ack.outcome === "Applied") {
      this.send("Complete");
      this.o.stats.handedOver++;
      this.finish();
      return;
    }
    this.fail(`unexpected ${name} ${JSON.stringify(m, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)).slice(0, 120)} while ${this.step === "waiting" ? "the prefill runs" : `at step ${this.step}`}`);
  }

  private settled(outcome: RoomOutcome | undefined): void {
    if (outcome?.kind === "held" && this.step !== "waiting") return outcome.release(); // the decode went away meanwhile
    if (this.step !== "waiting") return;
    const room = this.identity!.bootstrap_room;
    if (outcome === undefined) {
      this.o.stats.timedOut++;
      this.o.logger.warn(`bootstrap port ${this.port}: room ${room}: the prefill did not finish within the rendezvous timeout; closing`);
      return this.finish();
    }
    if (outcome.kind === "aborted") {
      this.o.stats.aborted++;
      this.o.logger.debug(`bootstrap port ${this.port}: room ${room}: the prefill ended without its KV; closing`);
      return this.finish();
    }
    this.held = outcome;
    this.step = "reserve";
    const handoffId = this.identity!.handoff_id;
    const { mode, kvBytesPerToken, bandwidthGbS } = this.o.timing;
    this.send({ Fact: { SourceHeld: { handoff_id: handoffId, transfer_timing: { mode, full_prompt_tokens: outcome.promptTokens, kv_bytes_per_token: kvBytesPerToken, bandwidth_gb_s: bandwidthGbS } } } });
    this.send({ Action: { id: 1, action: { ReserveDestination: { handoff_id: handoffId } } } });
  }

  private send(message: unknown): void {
    this.conn.write(encodeHandoffFrame({ identity: this.identity!, message }));
  }

  private fail(problem: string): void {
    this.o.stats.failed++;
    this.o.logger.warn(`bootstrap port ${this.port}: ${problem}; closing the connection`);
    this.finish();
  }

  /** The exchange is over: the KV goes (handed over, or never to be), the connection closes. */
  private finish(): void {
    this.step = "done";
    this.held?.release();
    this.held = undefined;
    this.conn.end();
  }
}

export function listenBootstrap(host: string, port: number, o: HandoffSourceOptions): TcpListener {
  const exchanges = new WeakMap<TcpConnection, SourceExchange>();
  const exchangeOf = (conn: TcpConnection) => {
    let e = exchanges.get(conn);
    if (e === undefined) exchanges.set(conn, (e = new SourceExchange(conn, listener?.port ?? port, o)));
    return e;
  };
  let listener: TcpListener | undefined;
  try {
    listener = listenTcp(host, port, {
      data: (conn, chunk) => exchangeOf(conn).data(chunk),
      close: (conn) => exchanges.get(conn)?.closed(),
      error: (err) => o.logger.debug(`bootstrap connection error: ${err.message}`),
    });
  } catch (err) {
    throw bindFailed("BIND_FAILED", "serve a bootstrap port (--bootstrap-ports)", host, port, (err as { cause?: unknown }).cause ?? err);
  }
  return listener;
}
