// One routed request's trip to its workers: builds its RequestRun (retries and migrations across
// attempts, request-run.ts), keeps the client-facing bookkeeping (latency, TTFT, the client
// leaving), maps a run that failed before any answer to the client's error, and hands the rest to
// openai-reply.ts. An ejected worker is probed back by health-probe.ts, and a stalled one probed
// (stall-probe.ts), both started here.
import type { Logger } from "../../lib/logger.ts";
import type { DecodeLeg } from "./disagg/decode-leg.ts";
import { errorTypeOf, type ErrorType, type RequestTrack } from "./dynamo-metrics.ts";
import type { GenerationRequest, ResponseMeta } from "../../protocol/openai.ts";
import { fetchProbe, HealthProbe, type ProbeWorker } from "./health-probe.ts";
import type { FrontendMetrics } from "./metrics.ts";
import { sseReply, wholeReply, type Kind, type ReplyContext } from "./openai-reply.ts";
import { RequestRun, RunFailed, type RunPolicy } from "./request-run.ts";
import { StallProbe } from "./stall-probe.ts";
import type { RoutingState } from "./routing-state.ts";
import type { RoutePlan } from "./route-plan.ts";
import { callFailure, failureResponse, type WorkerFailure } from "./worker-failure.ts";
import { onClientGone } from "../../transport/http/server-request.ts";
import { StallWatch, WorkerCancel, type WorkerTransport } from "./worker-call.ts";

export interface ProxyDeps {
  state: RoutingState;
  metrics: FrontendMetrics;
  /** A worker that sends nothing for this long fails the request with 504. */
  stallTimeoutMs: number;
  callWorker: WorkerTransport;
  /** Monotonic ms. */
  now: () => number;
  /** Unix seconds for `created`. */
  wallSeconds: () => number;
  /** Unique per process: request ids are `${idPrefix}-${n}`. */
  idPrefix: string;
  /** Retries and migrations (default: 2 retries, no migration, as the frontend's flags default). */
  failures?: Partial<RunPolicy>;
  /** Asks a worker's /health, ejected or stalled (default: GET over fetch, 200 = healthy). */
  probeWorker?: ProbeWorker;
  /** Retries and migrations are logged here (warn). */
  logger?: Logger;
}

/** The request as parsed and routed: what its worker call needs. */
export interface RoutedRequest {
  kind: Kind;
  request: GenerationRequest;
  tokens: number[];
  plan: RoutePlan;
  /** When the frontend received it (monotonic ms). */
  t0: number;
  /** Dynamo's per-request accounting (http-app.ts begins it); ended here. */
  track?: RequestTrack;
  /** A disaggregated request's decode leg (disagg/decode-leg.ts). */
  leg?: DecodeLeg;
}

export interface Proxy {
  (req: Request, routed: RoutedRequest): Promise<Response>;
  /** The frontend is stopping: no more retries or migrations, and no health probes. */
  close(): void;
}

export function createProxy(deps: ProxyDeps): Proxy {
  const { state, metrics } = deps;
  const stalls = new StallWatch(deps.stallTimeoutMs, deps.now);
  const policy: RunPolicy = { retries: deps.failures?.retries ?? 2, migrationLimit: deps.failures?.migrationLimit ?? 0, migrationMaxSeqLen: deps.failures?.migrationMaxSeqLen };
  const probeWorker = deps.probeWorker ?? fetchProbe;
  const probes = new HealthProbe(state, probeWorker);
  const stallProbe = new StallProbe(state, probeWorker, metrics.stallProbes, () => probes.wake());
  let closing = false;
  let seq = 0;

  const proxy = async (req: Request, { kind, request: r, tokens, plan, track, leg }: RoutedRequest): Promise<Response> => {
    const requestId = `${deps.idPrefix}-${++seq}`;
    const run = new RequestRun({ state, metrics, callWorker: deps.callWorker, stalls, stallProbe, policy, logger: deps.logger, closing: () => closing }, { model: r.model, prompt: tokens, maxTokens: r.maxTokens, requestId, plan, leg });
    let finished = false;
    const finish = (error?: ErrorType, cachedTokens?: number) => {
      if (finished) return;
      finished = true;
      run.close();
      probes.wake();
      track?.end(error, cachedTokens);
    };
    onClientGone(req, () => run.cancel());
    try {
      await run.open();
    } catch (err) {
      const f = failureOf(err, run.plan.worker.id);
      finish(errorTypeOf(f.status));
      return failureResponse(f);
    }
    const meta: ResponseMeta = { id: `${kind === "chat" ? "chatcmpl" : "cmpl"}-${requestId}`, created: Math.floor(deps.wallSeconds()), model: r.model };
    const served = run.plan;
    const reply: ReplyContext = {
      kind,
      meta,
      workerId: served.worker.id,
      // Which (worker, rank) served it first: `kvcr-mock bench` counts its per_worker spread from these.
      servedBy: { "x-kvcr-worker": served.worker.id, "x-kvcr-dp-rank": String(served.dpRank) },
      tokens: (n) => track?.tokens(n, tokens.length),
      finish,
      failure: (err) => failureOf(err, run.plan.worker.id),
    };
    return r.stream ? sseReply(run, reply, { includeUsage: r.includeUsage, continuousUsage: r.continuousUsage, promptTokens: tokens.length }) : wholeReply(run, reply);
  };
  return Object.assign(proxy, {
    close: () => {
      closing = true;
      probes.close();
    },
  });
}

/** The client's error for what a run threw (RunFailed carries it; anything else is the worker's failure). */
function failureOf(err: unknown, workerId: string): WorkerFailure {
  return err instanceof RunFailed ? err.failure : callFailure(new WorkerCancel(), err, workerId);
}
