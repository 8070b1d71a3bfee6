// The agent's normalized router-event stream (SPEC §5 "Output", §6.1): one PUB, frames
// [topic "", cursor u64 BE, payload]; the cursor starts at 1 and grows by 1 per batch. Events of
// every slot queued during a tick go out as ONE batch at the end of it (a microtask), so a burst of
// raw batches costs one encode and one send. flush() sends now: the snapshot and the attachment
// records stamp the cursor that reflects everything queued before them.
import { endOfTick } from "../../lib/end-of-tick.ts";
import type { Logger } from "../../lib/logger.ts";
import { encodeRouterEvents, type RouterEvent } from "../../protocol/router-events.ts";
import { formatEndpoint, parseEndpoint, PubSocket } from "../../transport/zmtp/index.ts";

const EMPTY = new Uint8Array(0);
/** Send HWM per subscriber, as the raw PUBs (vLLM's default). */
export const OUTBOUND_SEND_HWM = 100_000;

const flushAtTickEnd = endOfTick((o: RouterEventOutbound) => o.flush());

export class RouterEventOutbound implements AsyncDisposable {
  readonly endpoint: string;
  readonly port: number;
  private readonly pub: PubSocket;
  private readonly frames: Uint8Array[];
  private readonly cursorView: DataView;
  private pending: RouterEvent[] = [];
  private scheduled = false;
  /** Cursor of the last batch sent (0 = none yet). */
  private sent = 0;
  eventsPublished = 0;
  encodeErrors = 0;
  private closed = false;

  constructor(host: string, port: number, private readonly logger: Logger) {
    this.pub = new PubSocket({ logger, sendHighWaterMark: OUTBOUND_SEND_HWM });
    try {
      this.endpoint = this.pub.bind(formatEndpoint(host.replace(/^\[(.*)\]$/, "$1"), port));
    } catch (e) {
      this.pub.close();
      throw e;
    }
    this.port = parseEndpoint(this.endpoint, "connect").port;
    const cursorFrame = new Uint8Array(8);
    this.cursorView = new DataView(cursorFrame.buffer);
    this.frames = [EMPTY, cursorFrame, EMPTY];
  }

  push(event: RouterEvent): void {
    if (this.closed) return;
    this.pending.push(event);
    if (!this.scheduled) {
      this.scheduled = true;
      flushAtTickEnd(this);
    }
  }

  /** Sends what is queued as one batch; returns the cursor that now reflects every event pushed. */
  flush(): number {
    this.scheduled = false;
    const events = this.pending;
    if (events.length === 0 || this.closed) return this.sent;
    this.pending = [];
    let payload: Uint8Array;
    try {
      payload = encodeRouterEvents(events);
    } catch (e) {
      // Unreachable with events built by SlotResidency; a bug costs one batch, not the process.
      this.encodeErrors += events.length;
      this.logger.error(`router events: dropping a batch of ${events.length} event(s) that cannot be encoded: ${(e as Error).message}`);
      return this.sent;
    }
    const cursor = ++this.sent;
    this.cursorView.setUint32(0, Math.floor(cursor / 0x1_0000_0000));
    this.cursorView.setUint32(4, cursor >>> 0);
    this.frames[2] = payload;
    this.pub.send(this.frames);
    this.frames[2] = EMPTY;
    this.eventsPublished += events.length;
    return cursor;
  }

  /** Cursor of the last batch sent. */
  get cursor(): number {
    return this.sent;
  }

  get queuedEvents(): number {
    return this.pending.length;
  }

  subscriberCount(): number {
    return this.pub.subscriberCount(EMPTY);
  }

  droppedByHwm(): number {
    return this.pub.stats().messagesDropped;
  }

  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.pub.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }
}
