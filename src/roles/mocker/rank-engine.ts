// One (worker, rank) of the mocker: its engine as the live loop steps it, the sinks of its
// requests, its event outlets, and what must happen between steps (state dumps and the truth read
// when what it holds equals what it published; the pause, slow and clear_all faults).
import type { StepResult } from "../../core/engine/engine-types.ts";
import type { MockEngine } from "../../core/engine/mock-engine.ts";
import type { KvEvent } from "../../core/kv/kv-events.ts";
import type { Logger } from "../../lib/logger.ts";
import type { TokenSink } from "./token-stream.ts";
import type { LoopEngine } from "./live-loop.ts";
import { LocalHashIndex } from "./local-hash-index.ts";
import type { DisaggSide } from "./pd/disagg-side.ts";
import type { RankPublisher } from "./rank-publisher.ts";
import { stateDumpEvents } from "./state-dump.ts";
import type { VllmRankStats } from "./vllm-stats.ts";

/** Where a rank's KV events go after each step (raw PUB, relay); both are optional. */
export interface EventOutlet {
  publish(events: readonly KvEvent[], tsSeconds: number): void;
}

/** A state dump (state-dump.ts) encoded as one raw payload, and the last raw seq it reflects (-1: none published). */
export type DumpOutcome = { ok: true; seq: number; payload: Uint8Array; unresolved: number } | { ok: false; status: 404 | 500 | 501; message: string };

/** One (worker, rank): its engine as the live loop steps it, and the sinks of its requests. */
export class RankEngine implements LoopEngine<StepResult> {
  readonly sinks = new Map<string, TokenSink>();
  readonly outlets: EventOutlet[] = [];
  /** The rank's raw publisher (its seq and encoding), when raw ports are configured: dumps need it. */
  rawPublisher: RankPublisher | undefined;
  /** The last step's events wait for its duration to pass before they are published. */
  private unpublished = false;
  private readonly atPublished: (() => void)[] = [];
  /** One token's id handed to a sink; reused (a step delivers one token per running request). */
  private readonly oneToken = [0];
  /** Local hash of every block published as resident, per tier: the truth endpoint lists both hashes. */
  readonly localHashes = new LocalHashIndex();
  /** The slow fault: step durations × this. */
  timeScale = 1;
  /** The pause fault: no step runs, and the tokens of the step in flight wait for resume(). */
  private paused = false;
  private heldTokens: StepResult | undefined;
  /** clear_all waiting for the rank to have no running request (vLLM refuses a reset meanwhile). */
  private clearPending: (() => void) | undefined;
  /** The process's disaggregated role: prefill holds and reply params, decode pulls landed. */
  disagg: DisaggSide | undefined;
  /** When the last step's results are due (loop clock): its tokens count as produced then. */
  private stepEndMs = 0;

  constructor(
    readonly worker: number,
    readonly rank: number,
    readonly engine: MockEngine,
    private readonly wallSeconds: () => number,
    private readonly logger: Logger,
    /** vLLM's engine metrics for this rank (vllm-metrics.ts). */
    readonly stats: VllmRankStats,
    /** The live loop's clock (ms): arrivals and deliveries are timed on it. */
    readonly clockMs: () => number,
  ) {}

  hasWork(): boolean {
    if (this.paused) return false;
    return this.engine.pendingRequests > 0 || this.engine.nextWakeMs() !== undefined;
  }

  step(nowMs: number): { durationMs: number; result: StepResult; idle?: boolean } {
    const result = this.engine.step(nowMs);
    this.unpublished = result.events.length > 0;
    if (result.scheduledRequests === 0 && result.durationMs === 0) {
      // Nothing could compute (loads or copies in flight): wait for the next landing, unless a
      // new request wakes the engine first (LiveLoop.wake cuts idle waits short).
      this.stepEndMs = nowMs;
      const wake = this.engine.nextWakeMs();
      return { durationMs: wake !== undefined ? Math.max(wake - nowMs, 0.1) : 1, result, idle: true };
    }
    const durationMs = result.durationMs * this.timeScale;
    this.stepEndMs = nowMs + durationMs;
    return { durationMs, result };
  }

  deliver(result: StepResult): void {
    // Paused: the step in flight did compute, so its KV events go out (what the truth endpoint
    // lists stays what was published) but its tokens wait for resume().
    if (this.paused) this.heldTokens = result;
    else this.deliverTokens(result, this.stepEndMs);
    this.publishEvents(result.events);
    if (result.remoteLoads) this.disagg?.landed(result.remoteLoads);
    if (result.dropped && result.dropped.length > 0) {
      this.logger.warn(`worker ${this.worker} rank ${this.rank}: dropped ${result.dropped.length} host store(s) whose token ids could not be recovered`);
    }
    if (this.clearPending) this.clearPending();
  }

  /** Stops stepping (the pause fault); a request sent meanwhile waits. */
  pause(): void {
    this.paused = true;
  }

  /** Ends a pause: the held tokens go out; true when the loop should wake this engine. */
  resume(): boolean {
    if (!this.paused) return false;
    this.paused = false;
    const held = this.heldTokens;
    this.heldTokens = undefined;
    if (held) this.deliverTokens(held, this.clockMs());
    return this.hasWork();
  }

  /**
   * The clear_all fault: vLLM's reset_prefix_cache (every cached G1 block freed, AllBlocksCleared
   * published), run between steps once no request holds blocks; resolves when it ran.
   */
  clearCache(): Promise<void> {
    return new Promise((resolve) => {
      const attempt = () => {
        const r = this.engine.resetPrefixCache();
        if (!r) return void (this.clearPending = () => this.whenPublished(attempt));
        this.clearPending = undefined;
        this.publishEvents(r.events);
        resolve();
      };
      this.whenPublished(attempt);
    });
  }

  /**
   * vLLM's reset_prefix_cache as its API serves it: tried once, between steps; refused while
   * requests run (their blocks cannot be freed). Resolves 0 when cleared (AllBlocksCleared
   * published), else the running requests that stopped it.
   */
  tryClearCache(): Promise<number> {
    return new Promise((resolve) =>
      this.whenPublished(() => {
        const r = this.engine.resetPrefixCache();
        // Blocks held for a decode worker's pull are in use like a running request's.
        if (!r) {
          const m = this.engine.metrics();
          return resolve(m.runningRequests + m.heldRequests);
        }
        this.publishEvents(r.events);
        resolve(0);
      }),
    );
  }

  private deliverTokens(result: StepResult, atMs: number): void {
    this.stats.delivered(result, atMs);
    const one = this.oneToken;
    for (const t of result.tokens) {
      one[0] = t.tokenId;
      this.sinks.get(t.requestId)?.tokens(one);
    }
    for (const f of result.finished) {
      const sink = this.sinks.get(f.requestId);
      this.sinks.delete(f.requestId);
      const transfer = f.heldBlockIds ? this.disagg?.finished(this, f.requestId, f.heldBlockIds) : undefined;
      sink?.finish({
        finish_reason: "length",
        prompt_tokens: f.promptTokens,
        cached_tokens: f.cachedTokens,
        host_loaded_tokens: f.hostLoadedTokens,
        completion_tokens: f.completionTokens,
        ...(transfer ? { kv_transfer_params: transfer } : {}),
      });
    }
  }

  private publishEvents(events: readonly KvEvent[]): void {
    if (events.length > 0) {
      const ts = this.wallSeconds();
      for (const outlet of this.outlets) outlet.publish(events, ts);
      this.indexLocalHashes(events);
    }
    this.unpublished = false;
    // Synchronously, before the loop steps this engine again: its residency equals what was published.
    for (const fn of this.atPublished.splice(0)) fn();
  }

  private indexLocalHashes(events: readonly KvEvent[]): void {
    const index = this.localHashes;
    for (const e of events) {
      if (e.kind === "stored") index.stored(e.tier, e.blockHashes, e.localHashes);
      else if (e.kind === "removed") for (const h of e.blockHashes) index.removed(e.tier, h);
      else index.cleared(e.tier);
    }
  }

  /**
   * Runs `fn` when the engine's residency equals what its outlets have sent: now, or right after
   * the pending step's events go out (the state dump and the truth endpoint read it then).
   */
  whenPublished(fn: () => void): void {
    if (this.unpublished) this.atPublished.push(fn);
    else fn();
  }

  /** The last raw seq published (-1: none), when this rank publishes a raw stream. */
  get lastSeq(): number | undefined {
    return this.rawPublisher ? this.rawPublisher.nextSeq - 1 : undefined;
  }

  /**
   * Every resident block as one raw payload, with the raw seq it reflects: built when the engine's
   * residency equals what its PUB has sent (now, or right after the pending step's events go out).
   */
  dump(): Promise<DumpOutcome> {
    const pub = this.rawPublisher;
    if (!pub) return Promise.resolve({ ok: false, status: 404, message: `worker ${this.worker} rank ${this.rank} publishes no raw KV events (no --zmq-kv-events-ports)` });
    return new Promise((resolve) => {
      // May run inside the live loop (deliver): it must not throw there.
      const build = () => {
        try {
          const dump = stateDumpEvents(this.engine);
          if (!dump) return resolve({ ok: false, status: 501, message: "state dumps need token records, kept only with a host tier (--num-host-blocks > 0)" });
          resolve({ ok: true, seq: pub.nextSeq - 1, payload: pub.encodeDump(dump.events, this.wallSeconds()), unresolved: dump.unresolved });
        } catch (err) {
          resolve({ ok: false, status: 500, message: `state dump failed: ${(err as Error).message}` });
        }
      };
      this.whenPublished(build);
    });
  }
}
