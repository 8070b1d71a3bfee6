// A router-event stream's sending side, shared by the mocker's relay (direct mode) and the agent's
// outbound stream: [topic, cursor u64 BE, payload] on a bound PUB, cursor from 1, +1 per batch;
// events queued during a tick go out as ONE batch at its end (a microtask); flush() sends now.
import { endOfTick } from "../../../lib/end-of-tick.ts";
import type { Logger } from "../../../lib/logger.ts";
import { encodeRouterEvents, type RouterEvent } from "../../../protocol/router-events.ts";
import { SeqFrame } from "../../../protocol/seq-frame.ts";
import type { PubSocket } from "../../../transport/zmtp/index.ts";

const EMPTY = new Uint8Array(0);

// One microtask flushes every stream that queued events during the current tick.
const flushAtTickEnd = endOfTick((p: RouterEventPub) => p.flush());

export class RouterEventPub {
  private readonly frames: Uint8Array[];
  private readonly cursorFrame = new SeqFrame();
  private pending: RouterEvent[] = [];
  private scheduled = false;
  /** Cursor of the last batch sent (0 = none yet). */
  private sent = 0;
  eventsPublished = 0;
  /** Events dropped because their batch could not be encoded (a bug in whoever built them). */
  encodeErrors = 0;
  private closed = false;

  /** `pub` is bound already; it is closed by close(). `label` starts log lines ("router events w1"). */
  constructor(
    private readonly pub: PubSocket,
    topic: string,
    private readonly logger: Logger,
    private readonly label: string,
  ) {
    this.frames = [topic === "" ? EMPTY : new TextEncoder().encode(topic), this.cursorFrame.bytes, EMPTY];
  }

  /** Queues one event for this tick's batch; nothing once closed. */
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
      // Unreachable with events built by the relay or the agent; a bug costs one batch, not the process.
      this.encodeErrors += events.length;
      this.logger.error(`${this.label}: dropping a batch of ${events.length} event(s) that cannot be encoded: ${(e as Error).message}`);
      return this.sent;
    }
    const cursor = ++this.sent;
    this.cursorFrame.set(cursor);
    this.frames[2] = payload;
    this.pub.send(this.frames);
    this.frames[2] = EMPTY;
    this.eventsPublished += events.length;
    return cursor;
  }

  /** Cursor of the last batch sent (0 = none yet). */
  get cursor(): number {
    return this.sent;
  }

  get queuedEvents(): number {
    return this.pending.length;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  subscriberCount(): number {
    return this.pub.subscriberCount(this.frames[0]!);
  }

  /** Subscribers dropped for passing a subscription bound. */
  subscribersOverLimits(): number {
    return this.pub.peersOverSubscriptionLimits;
  }

  /** Batch copies dropped for subscribers at their send high-water mark. */
  droppedByHwm(): number {
    return this.pub.stats().messagesDropped;
  }

  /** Sends what is queued, then closes the PUB; later push() calls do nothing. */
  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.pub.close();
  }
}
