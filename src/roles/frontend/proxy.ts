// One routed request's trip to its worker: builds the POST /v1/generate body, calls the worker,
// keeps the request's bookkeeping (in flight on its worker, stall watch, the router's load, latency
// and TTFT), maps a failed call or a non-200 answer to the client's error, and hands a 200 answer
// to openai-reply.ts.
import type { GenerateBody } from "../../protocol/generate.ts";
import type { GenerationRequest, ResponseMeta } from "../../protocol/openai.ts";
import type { FrontendMetrics } from "./metrics.ts";
import { sseReply, wholeReply, type Kind, type ReplyContext } from "./openai-reply.ts";
import type { RoutePlan, RoutingState } from "./routing-state.ts";
import { answerFailure, callFailure, failureResponse } from "./worker-failure.ts";
import { ClientGone, readAll, StallWatch, WorkerCancel, type WorkerReply, type WorkerTransport } from "./worker-call.ts";

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
}

/** The request as parsed and routed: what its worker call needs. */
export interface RoutedRequest {
  kind: Kind;
  request: GenerationRequest;
  tokens: number[];
  plan: RoutePlan;
  /** When the frontend received it (monotonic ms): latency and TTFT count from here. */
  t0: number;
}

export type Proxy = (req: Request, routed: RoutedRequest) => Promise<Response>;

const DECODER = new TextDecoder();

export function createProxy(deps: ProxyDeps): Proxy {
  const { state, metrics } = deps;
  const stalls = new StallWatch(deps.stallTimeoutMs, deps.now);
  let seq = 0;

  return async (req, { kind, request: r, tokens, plan, t0 }) => {
    const ctrl = new WorkerCancel();
    const worker = plan.worker;
    worker.inflight.add(ctrl);
    const stall = stalls.watch(ctrl, worker.id);
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      stall.stop();
      worker.inflight.delete(ctrl);
      state.finish(plan);
      metrics.latency.observe((deps.now() - t0) / 1000);
    };
    const onClientAbort = () => ctrl.abort(new ClientGone());
    req.signal.addEventListener("abort", onClientAbort, { once: true });
    const requestId = `${deps.idPrefix}-${++seq}`;
    const body: GenerateBody = { worker: worker.record.worker_index, dp_rank: plan.dpRank, token_ids: tokens, max_tokens: r.maxTokens, request_id: requestId };
    if (plan.kvHint) body.kv_hint = plan.kvHint;
    const meta: ResponseMeta = { id: `${kind === "chat" ? "chatcmpl" : "cmpl"}-${requestId}`, created: Math.floor(deps.wallSeconds()), model: r.model };

    let res: WorkerReply;
    try {
      res = await deps.callWorker(worker.record.request_url, JSON.stringify(body), ctrl, stall);
    } catch (err) {
      finish();
      return failureResponse(callFailure(ctrl, err, worker.id));
    }
    if (res.status !== 200) {
      const text = await readAll(res).then((b) => DECODER.decode(b), () => "");
      finish();
      return failureResponse(answerFailure(worker.id, res.status, text));
    }
    // The whole-answer path hears both the first chunk and the first token: the router hears it once.
    let prefillOver = false;
    const prefillDone = () => {
      if (prefillOver) return;
      prefillOver = true;
      state.firstToken(plan);
    };
    const reply: ReplyContext = {
      kind,
      meta,
      workerId: worker.id,
      ctrl,
      // Which (worker, rank) served it: `kvcr-mock bench` counts its per_worker spread from these.
      servedBy: { "x-kvcr-worker": worker.id, "x-kvcr-dp-rank": String(plan.dpRank) },
      prefillDone,
      firstToken: () => {
        prefillDone();
        metrics.ttft.observe((deps.now() - t0) / 1000);
      },
      finish,
      failure: (err) => callFailure(ctrl, err, worker.id),
    };
    return r.stream ? sseReply(res, reply, r.includeUsage) : wholeReply(res, reply);
  };
}
