// The prefill leg of a disaggregated request (vLLM's P/D proxy, Dynamo's prefill router): the
// prompt goes to a prefill worker picked by the prefill pool's router with max_tokens 1 and
// kv_transfer_params.do_remote_decode, and its summary line's kv_transfer_params come back for the
// decode leg; a LoRA adapter's leg goes to a prefill worker holding it, with its lora_name. A prefill worker that fails is reported (it may leave routing) and the next one is
// tried, --router-retries times; with none left, undefined: the request runs aggregated. Only the
// client's own faults (its request refused, the client gone) end the request here.
import type { GenerateBody } from "../../../protocol/generate.ts";
import type { FrontendMetrics } from "../metrics.ts";
import { RunFailed } from "../request-run.ts";
import type { RoutingState } from "../routing-state.ts";
import type { RoutePlan } from "../route-plan.ts";
import { answerAttemptFailure, attemptFailure, unfinishedStream, type AttemptFailure } from "../worker-failure.ts";
import { allLines, ClientGone, readAll, WorkerCancel, type StallWatch, type WorkerTransport } from "../worker-call.ts";
import type { AggregatedReason } from "./prefill-metrics.ts";

export interface PrefillLegDeps {
  state: RoutingState;
  metrics: FrontendMetrics;
  callWorker: WorkerTransport;
  stalls: StallWatch;
  /** Prefill workers tried after the first one failed. */
  retries: number;
  logger?: { warn(msg: string): void };
}

export type PrefillOutcome = { ok: true; params: Record<string, unknown>; plan: RoutePlan } | { ok: false; reason: AggregatedReason };

const DECODER = new TextDecoder();

/** Throws RunFailed for the client's own faults; otherwise the prefill reply's params or why there are none. */
export async function runPrefillLeg(d: PrefillLegDeps, model: string, tokens: readonly number[], requestId: string, signal?: AbortSignal): Promise<PrefillOutcome> {
  const tried = new Set<string>();
  const pd = d.metrics.disagg;
  // A LoRA adapter no prefill worker in routing holds: its decode holders prefill it (none would answer but 404).
  if (d.state.isAdapter(model) && !d.state.poolHolds(model, "prefill")) return { ok: false, reason: "adapter_not_on_prefill" };
  for (let n = 0; n <= d.retries; n++) {
    const plan = d.state.route(model, tokens, tried, { pool: "prefill" });
    if ("status" in plan) return { ok: false, reason: plan.code === "overloaded" ? "prefill_busy" : n === 0 ? "no_prefill_worker" : "prefill_failed" };
    tried.add(plan.worker.id);
    pd.legs.prefill++;
    const out = await callPrefill(d, plan, tokens, n === 0 ? `${requestId}-prefill` : `${requestId}-prefill-${n}`, signal);
    if (!("kind" in out)) {
      if (out.params !== undefined) return { ok: true, params: out.params, plan };
      return { ok: false, reason: "no_transfer_params" };
    }
    if (out.kind === "client" || out.kind === "refused") throw new RunFailed(out.failure);
    pd.prefillFailures++;
    if (out.kind === "unsent" || out.kind === "lost" || out.kind === "shutdown") d.state.reportFailure(plan.worker.id, true);
    else if (out.kind === "stalled" || out.kind === "error" || out.kind === "busy") d.state.reportFailure(plan.worker.id, false);
    d.logger?.warn(`${requestId}: prefill leg failed: ${out.failure.body.error.message}${n < d.retries ? "; next prefill worker" : "; running it aggregated"}`);
  }
  return { ok: false, reason: "prefill_failed" };
}

/** One prefill attempt: the reply's params (undefined when it named none), or why it failed. */
async function callPrefill(d: PrefillLegDeps, plan: RoutePlan, tokens: readonly number[], requestId: string, signal?: AbortSignal): Promise<{ params: Record<string, unknown> | undefined } | AttemptFailure> {
  const { state } = d;
  const id = plan.worker.id;
  const ctrl = new WorkerCancel();
  plan.worker.inflight.add(ctrl);
  const stall = d.stalls.watch(ctrl, id);
  const onAbort = () => ctrl.abort(new ClientGone());
  signal?.addEventListener("abort", onAbort, { once: true });
  if (signal?.aborted) onAbort();
  const body: GenerateBody = { worker: plan.worker.record.worker_index, dp_rank: plan.dpRank, token_ids: tokens as number[], max_tokens: 1, request_id: requestId, kv_transfer_params: { do_remote_decode: true } };
  if (plan.loraName !== undefined) body.lora_name = plan.loraName;
  let answered = false;
  try {
    const reply = await d.callWorker(plan.worker.record.request_url, JSON.stringify(body), ctrl, stall);
    answered = true;
    if (reply.status !== 200) return answerAttemptFailure(id, reply.status, DECODER.decode(await readAll(reply).catch(() => new Uint8Array(0))));
    const lines = await allLines(reply, () => state.firstToken(plan));
    const last = lines.at(-1);
    if (last === undefined || "token_id" in last) return unfinishedStream(id, false);
    if (last.finish_reason !== "length") return unfinishedStream(id, true);
    state.reportSuccess(id);
    return { params: last.kv_transfer_params };
  } catch (err) {
    return attemptFailure(ctrl, err, id, answered);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    stall.stop();
    plan.worker.inflight.delete(ctrl);
    state.finish(plan);
  }
}
