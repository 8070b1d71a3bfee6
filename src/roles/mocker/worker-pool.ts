// The engines of one mocker process, one RankEngine per (worker, rank) (rank-engine.ts), stepped by
// the live loop and fed by the HTTP app: submits, cancels, dumps and metrics over all of them.
// Implements the WorkerPool the HTTP app serves.
import type { StepResult } from "../../core/engine/engine-types.ts";
import type { DiscoveryHealth } from "../../discovery/status.ts";
import type { GenerateRequest } from "../../protocol/generate.ts";
import type { MetricFamily } from "../../protocol/prometheus.ts";
import type { Logger } from "../../lib/logger.ts";
import type { SubmitOutcome } from "./generation.ts";
import type { DumpReply, WorkerPool } from "./http-app.ts";
import type { TokenSink } from "./token-stream.ts";
import type { LiveLoop } from "./live-loop.ts";
import type { LoraAdapters } from "./lora-adapters.ts";
import type { LoraMetrics } from "./lora-metrics.ts";
import { engineMetricFamilies } from "./metrics.ts";
import type { DisaggSide, EngineFlags } from "./pd/disagg-side.ts";
import type { RankEngine } from "./rank-engine.ts";
import { vllmMetricFamilies } from "./vllm-metrics.ts";

interface InFlight {
  worker: number;
  rank: RankEngine;
  sink: TokenSink;
  promptTokens: number;
  completionTokens: number;
}

export class MockerWorkerPool implements WorkerPool {
  private nextId = 0;
  private readonly byRequest = new Map<string, InFlight>();
  /** Requests in flight per worker, whichever API they came in on (the worker API's /load). */
  private readonly inFlightByWorker: number[];
  registered = 0;
  /** The workers' LoRA adapters and their metrics (set by the process at start). */
  lora: { adapters: LoraAdapters; metrics: LoraMetrics } | undefined;

  constructor(
    /** The engines, indexed [worker][rank]. */
    readonly ranks: readonly (readonly RankEngine[])[],
    private readonly loop: LiveLoop<StepResult>,
    private readonly logger: Logger,
    private readonly extraMetrics: () => MetricFamily[] = () => [],
    /** The discovery connection, shown on /health. */
    readonly discovery?: () => DiscoveryHealth,
    /** Worker ids by index (the x-kvcr-worker header). */
    readonly workerIds: readonly string[] = ranks.map((_, i) => String(i)),
    /** vLLM's model_name label. */
    private readonly modelName = "mocker-engine",
  ) {
    this.inFlightByWorker = ranks.map(() => 0);
  }

  workerId(worker: number): string {
    return this.workerIds[worker] ?? String(worker);
  }

  /** Ends a rank's pause and steps it again if it has work. */
  resume(rank: RankEngine): void {
    if (rank.resume()) this.loop.wake(rank);
  }

  healthy(): boolean {
    return this.registered === this.ranks.length;
  }

  /** The process's disaggregated role (pd/disagg-side.ts); without it every request is aggregated. */
  disagg: DisaggSide | undefined;

  submit(req: GenerateRequest, sink: TokenSink): SubmitOutcome | Promise<SubmitOutcome> {
    if (this.disagg === undefined) return this.submitToEngine(req, sink, {});
    return this.disagg.submit(req, sink, this.ranks[req.worker]?.[req.dpRank], (r, s, flags) => this.submitToEngine(r, s, flags));
  }

  private submitToEngine(req: GenerateRequest, sink: TokenSink, flags: EngineFlags): SubmitOutcome {
    const ranks = this.ranks[req.worker];
    if (!ranks) return { ok: false, status: 404, message: `unknown worker ${req.worker}; this process serves workers 0..${this.ranks.length - 1}` };
    const rank = ranks[req.dpRank];
    if (!rank) return { ok: false, status: 404, message: `unknown dp_rank ${req.dpRank} for worker ${req.worker}; ranks are 0..${ranks.length - 1}` };
    let id = req.requestId;
    // A generated id skips any a client chose itself, so only a client's own id can clash.
    while (id === undefined || (req.requestId === undefined && this.byRequest.has(id))) id = `req-${this.nextId++}`;
    if (this.byRequest.has(id)) return { ok: false, status: 409, message: `request_id ${id} is already in flight` };
    const lora = req.loraName;
    // vLLM's words for a model (adapter) this worker does not serve.
    if (lora !== undefined && !this.lora?.adapters.has(req.worker, lora)) return { ok: false, status: 404, message: `The model \`${lora}\` does not exist.` };
    const added = rank.engine.addRequest({ id, tokenIds: req.tokenIds, maxTokens: req.maxTokens, arrivalMs: rank.clockMs(), ...flags, ...(lora !== undefined ? { loraName: lora } : {}) });
    if (!added.ok) return { ok: false, status: 400, message: added.reason };
    if (lora !== undefined) this.lora!.adapters.counted(lora);
    rank.stats.arrived(id, req.maxTokens, rank.clockMs());
    if (req.kvHint) this.logger.debug(`router hint for request ${id} (worker ${req.worker}, rank ${req.dpRank}), ignored: ${JSON.stringify(req.kvHint)}`);
    const flight: InFlight = { worker: req.worker, rank, sink, promptTokens: req.tokenIds.length, completionTokens: 0 };
    this.byRequest.set(id, flight);
    this.inFlightByWorker[req.worker]!++;
    rank.sinks.set(id, {
      tokens: (ids) => {
        flight.completionTokens += ids.length;
        sink.tokens(ids);
      },
      finish: (summary) => {
        this.byRequest.delete(id);
        this.disagg?.forget(id);
        this.inFlightByWorker[req.worker]!--;
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
    this.disagg?.forget(requestId);
    this.inFlightByWorker[flight.worker]!--;
    flight.rank.sinks.delete(requestId);
    flight.rank.engine.abortRequest(requestId);
    flight.rank.stats.aborted(requestId);
  }

  /** Ends every in-flight request (shutdown): streams get a last line with finish_reason cancelled. */
  cancelAll(): number {
    let n = 0;
    for (const [id, f] of this.byRequest) {
      f.rank.sinks.delete(id);
      f.rank.engine.abortRequest(id);
      f.rank.stats.aborted(id);
      f.sink.finish({ finish_reason: "cancelled", prompt_tokens: f.promptTokens, cached_tokens: 0, host_loaded_tokens: 0, completion_tokens: f.completionTokens });
      n++;
    }
    this.byRequest.clear();
    this.inFlightByWorker.fill(0);
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

  /** Requests in flight on `worker` (all its ranks). */
  workerLoad(worker: number): number {
    return this.inFlightByWorker[worker] ?? 0;
  }

  /** Per rank of `worker`: its queue as vLLM's DP balancer counts it (loads waiting, as vLLM keeps them), and the tokens its requests' blocks hold. */
  rankLoads(worker: number): { waiting: number; running: number; kvTokens: number }[] {
    return (this.ranks[worker] ?? []).map((r) => {
      const m = r.engine.metrics();
      return { waiting: m.waitingRequests + m.loadingRequests, running: m.runningRequests - m.loadingRequests, kvTokens: m.activeBlocks * r.engine.config.blockSize };
    });
  }

  /** `worker`'s vLLM families only, labelled as vLLM labels them (its own API's /metrics). */
  workerMetrics(worker: number): MetricFamily[] {
    const views = (this.ranks[worker] ?? []).map((r) => ({ worker: r.worker, workerId: this.workerId(r.worker), rank: r.rank, engine: r.engine, stats: r.stats }));
    return [...vllmMetricFamilies(views, this.modelName, "worker"), ...(this.lora?.metrics.families(views, "worker") ?? [])];
  }

  /** vLLM's reset_prefix_cache on every rank of `worker`, between steps; the ranks that refused (requests running hold blocks). */
  async resetPrefixCache(worker: number): Promise<{ rank: number; running: number }[]> {
    const results = await Promise.all((this.ranks[worker] ?? []).map((r) => r.tryClearCache()));
    return results.flatMap((running, rank) => (running === 0 ? [] : [{ rank, running }]));
  }

  metrics(): MetricFamily[] {
    const ranks = this.ranks.flat();
    const views = ranks.map((r) => ({ worker: r.worker, workerId: this.workerId(r.worker), rank: r.rank, engine: r.engine, stats: r.stats }));
    return [...vllmMetricFamilies(views, this.modelName), ...engineMetricFamilies(views), ...(this.lora?.metrics.families(views, "process") ?? []), ...this.extraMetrics()];
  }
}
