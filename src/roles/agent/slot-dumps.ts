// One attachment's state dumps, the edge of RawSequencer's dump: fetch one when the sequencer asks
// (state-dump-fetch.ts), hand it over, and after a failure ask again 1 s later, doubling to 30 s
// (reset by a dump applied). Closed with the attachment: a fetch in flight is aborted.
import type { Logger } from "../../lib/logger.ts";
import type { RawSequencer } from "./raw-sequencer.ts";
import { fetchStateDump } from "./state-dump-fetch.ts";

const DUMP_RETRY_MS = 1000;
const DUMP_RETRY_MAX_MS = 30_000;

export interface SlotDumpsOptions {
  /** Names the slot in log lines. */
  label: string;
  /** The dump URL now (the intent may be updated in place). */
  url(): string;
  sequencer: RawSequencer;
  logger: Logger;
  maxBytes: number;
  timeoutMs: number;
  fetch?: ((url: string, init: RequestInit) => Promise<Response>) | undefined;
  /** A dump over maxBytes (counted with the slot's oversized payloads). */
  oversize(): void;
}

export class SlotDumps {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly abort = new AbortController();
  private retryMs = DUMP_RETRY_MS;
  private closed = false;

  constructor(private readonly o: SlotDumpsOptions) {}

  /** The sequencer's requestDump. */
  request(): void {
    const { o } = this;
    const url = o.url();
    // The dump a slot without replay loads on attach is routine (debug); one after a loss is news.
    const routine = o.sequencer.cursor === -1 && o.sequencer.counters.dropped === 0;
    o.logger[routine ? "debug" : "info"](`slot ${o.label}: degraded; asking ${url} for a state dump`);
    void fetchStateDump(url, { maxBytes: o.maxBytes, timeoutMs: o.timeoutMs, fetch: o.fetch, signal: this.abort.signal }).then((r) => {
      const sequencer = o.sequencer;
      if (this.closed || !sequencer.isDumping) return;
      if (!r.ok) {
        if (r.oversize) o.oversize();
        sequencer.dumpFailed(r.problem);
        return this.retryLater(r.problem);
      }
      sequencer.dumpArrived(r.seq, r.payload);
      if (!sequencer.degraded) {
        this.retryMs = DUMP_RETRY_MS;
        o.logger[routine ? "debug" : "info"](`slot ${o.label}: state dump at raw seq ${r.seq} applied; following live from ${r.seq + 1}`);
      } else if (!sequencer.isDumping) {
        this.retryLater("the dump could not be applied");
      }
    });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.abort.abort();
  }

  private retryLater(problem: string): void {
    const wait = this.retryMs;
    this.retryMs = Math.min(DUMP_RETRY_MAX_MS, wait * 2);
    this.o.logger.warn(`slot ${this.o.label}: state dump from ${this.o.url()} failed (${problem}); stays degraded, retrying in ${wait} ms`);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (!this.closed) this.o.sequencer.retryDump();
    }, wait);
  }
}
