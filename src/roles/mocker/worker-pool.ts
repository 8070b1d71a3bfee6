// The engines of one mocker process: one per (worker, rank), stepped by the live loop, fed by
// the HTTP app. Each step's tokens go to the requests' sinks and its KV events to the rank's
// outlets (raw PUB, direct-mode relay). Implements the WorkerPool the HTTP app serves.
import type { MockEngine } from "../../core/engine/mock-engine.ts";
import type { StepResult } from "../../core/engine/engine-types.ts";
import type { KvEvent } from "../../core/kv/kv-events.ts";
import type { GenerateRequest } from "../../protocol/generate.ts";
import type { MetricFamily } from "../../protocol/prometheus.ts";
import type { Logger } from "../../lib/logger.ts";
import type { DumpReply, SubmitOutcome, TokenSink, WorkerPool } from "./http-app.ts";
import type { LiveLoop, LoopEngine } from "./live-loop.ts";
import { engineMetricFamilies } from "./metrics.ts";
import type { RankPublisher } from "./rank-publisher.ts";
import { stateDumpEvents } from "./state-dump.ts";

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

  constructor(
    readonly worker: number,
    readonly rank: number,
    readonly engine: MockEngine,
    private readonly wallSeconds: () => number,
    private readonly logger: Logger,
  ) {}

  hasWork(): boolean {
    return this.engine.pendingRequests > 0 || this.engine.nextWakeMs() !== undefined;
  }

  step(nowMs: number): { durationMs: number; result: StepResult; idle?: boolean } {
    const result = this.engine.step(nowMs);
    this.unpublished = result.events.length > 0;
    if (result.scheduledRequests === 0 && result.durationMs === 0) {
      // Nothing could compute (loads or copies in flight): wait for the next landing, unless a
      // new request wakes the engine first (LiveLoop.wake cuts idle waits short).
      const wake = this.engine.nextWakeMs();
      return { durationMs: wake !== undefined ? Math.max(wake - nowMs, 0.1) : 1, result, idle: true };
    }
    return { durationMs: result.durationMs, result };
  }

  deliver(result: StepResult): void {
    const one = this.oneToken;
    for (const t of result.tokens) {
      one[0] = t.tokenId;
      this.sinks.get(t.requestId)?.tokens(one);
    }
    for (const f of result.finished) {
      const sink = this.sinks.get(f.requestId);
      this.sinks.delete(f.requestId);
      sink?.finish({
        finish_reason: "length",
        prompt_tokens: f.promptTokens,
        cached_tokens: f.cachedTokens,
        host_loaded_tokens: f.hostLoadedTokens,
        completion_tokens: f.completionTokens,
      });
    }
    if (result.events.length > 0) {
      const ts = this.wallSeconds();
      for (const outlet of this.outlets) outlet.publish(result.events, ts);
    }
    this.unpublished = false;
    // Synchronously, before the loop steps this engine again: its residency equals what was published.
    for (const fn of this.atPublished.splice(0)) fn();
    if (result.dropped && result.dropped.length > 0) {
      this.logger.warn(`worker ${this.worker} rank ${this.rank}: dropped ${result.dropped.length} host store(s) whose token ids could not be recovered`);
    }
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
      if (this.unpublished) this.atPublished.push(build);
      else build();
    });
  }
}

interface InFlight {
  rank: RankEngine;
  sink: TokenSink;
  promptTokens: number;
  completionTokens: number;
}

export class MockerWorkerPool implements WorkerPool {
  private nextId = 0;
  private readonly byRequest = new Map<string, InFlight>();
  registered = 0;

  constructor(
    /** The engines, indexed [worker][rank]. */
    readonly ranks: readonly (readonly RankEngine[])[],
    private readonly loop: LiveLoop<StepResult>,
    private readonly logger: Logger,
    private readonly extraMetrics: () => MetricFamily[] = () => [],
    /** The discovery connection, shown on /health. */
    readonly discovery?: () => unknown,
  ) {}

  healthy(): boolean {
    return this.registered === this.ranks.length;
  }

  submit(req: GenerateRequest, sink: TokenSink): SubmitOutcome {
    const ranks = this.ranks[req.worker];
    if (!ranks) return { ok: false, status: 404, message: `unknown worker ${req.worker}; this process serves workers 0..${this.ranks.length - 1}` };
    const rank = ranks[req.dpRank];
    if (!rank) return { ok: false, status: 404, message: `unknown dp_rank ${req.dpRank} for worker ${req.worker}; ranks are 0..${ranks.length - 1}` };
    let id = req.requestId;
    // A generated id skips any a client chose itself, so only a client's own id can clash.
    while (id === undefined || (req.requestId === undefined && this.byRequest.has(id))) id = `req-${this.nextId++}`;
    if (this.byRequest.has(id)) return { ok: false, status: 409, message: `request_id ${id} is already in flight` };
    const added = rank.engine.addRequest({ id, tokenIds: req.tokenIds, maxTokens: req.maxTokens });
    if (!added.ok) return { ok: false, status: 400, message: added.reason };
    if (req.kvHint) this.logger.debug(`router hint for request ${id} (worker ${req.worker}, rank ${req.dpRank}), ignored: ${JSON.stringify(req.kvHint)}`);
    const flight: InFlight = { rank, sink, promptTokens: req.tokenIds.length, completionTokens: 0 };
    this.byRequest.set(id, flight);
    rank.sinks.set(id, {
      tokens: (ids) => {
        flight.completionTokens += ids.length;
        sink.tokens(ids);
      },
      finish: (summary) => {
        this.byRequest.delete(id);
        sink.finish(summary);
      },
    });
    this.loop.wake(rank);
    return { ok: true, requestId: id };
  }

  cancel(requestId: string): void {
    const flight = this.byRequest.get(requestId);
    if (!flight) return;
    this.byRequest.delete(requestId);
    flight.rank.sinks.delete(requestId);
    flight.rank.engine.abortRequest(requestId);
  }

  /** Ends every in-flight request (shutdown): streams get a last line with finish_reason cancelled. */
  cancelAll(): number {
    let n = 0;
    for (const [id, f] of this.byRequest) {
      f.rank.sinks.delete(id);
      f.rank.engine.abortRequest(id);
      f.sink.finish({ finish_reason: "cancelled", prompt_tokens: f.promptTokens, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: f.completionTokens });
      n++;
    }
    this.byRequest.clear();
    return n;
  }

  async dump(worker: number, rank: number): Promise<DumpReply> {
    const engine = this.ranks[worker]?.[rank];
    if (!engine) return { ok: false, status: 404, message: `unknown worker ${worker} rank ${rank}; this process serves workers 0..${this.ranks.length - 1}` };
    const r = await engine.dump();
    if (r.ok && r.unresolved > 0) this.logger.warn(`worker ${worker} rank ${rank}: state dump left out ${r.unresolved} block(s) whose parent chain has no token record`);
    return r;
  }

  get inFlight(): number {
    return this.byRequest.size;
  }

  metrics(): MetricFamily[] {
    return [...engineMetricFamilies(this.ranks.flat()), ...this.extraMetrics()];
  }
}
