// Dynamo's prefill router in the frontend: on for a model while prefill workers for it are in
// discovery. A request's prefill leg goes to a prefill worker (prefill-leg.ts) and its decode leg
// to a decode worker picked on load alone, carrying the prefill reply's kv_transfer_params. With
// --router-conditional-disagg the decode worker is picked first, with its overlap credit, and a
// request whose effective prompt there is small (isl_bounding) is prefilled on it instead, marked
// x-bypass-remote-prefill. No prefill worker left, or none answering: the request runs aggregated.
import { shouldBypassRemotePrefill, type IslBounding } from "../../../core/routing/conditional-disagg.ts";
import { RunFailed } from "../request-run.ts";
import type { RouteFailure, RoutePlan } from "../route-plan.ts";
import { StallWatch } from "../worker-call.ts";
import { BYPASS_REMOTE_PREFILL, REMOTE_PREFILLED, REMOTE_PREFILLED_CONDITIONAL, type DecodeLeg } from "./decode-leg.ts";
import { runPrefillLeg, type PrefillLegDeps, type PrefillOutcome } from "./prefill-leg.ts";
import type { AggregatedReason } from "./prefill-metrics.ts";

export interface PrefillRouterDeps extends Omit<PrefillLegDeps, "stalls"> {
  /** --router-conditional-disagg's thresholds; undefined = off. */
  islBounding?: IslBounding;
  /** A prefill worker that sends nothing for this long fails its leg. */
  stallTimeoutMs: number;
  now: () => number;
  idPrefix: string;
}

export type Prepared = { plan: RoutePlan; leg: DecodeLeg } | RouteFailure;

export class PrefillRouter {
  private readonly d: PrefillLegDeps & PrefillRouterDeps;
  private seq = 0;
  private readonly adaptersLogged = new Set<string>();

  constructor(deps: PrefillRouterDeps) {
    this.d = { ...deps, stalls: new StallWatch(deps.stallTimeoutMs, deps.now) };
  }

  /** Whether the model's requests are disaggregated now: some prefill worker serves it. */
  active(model: string): boolean {
    const { state } = this.d;
    // An adapter no decode worker lists is answered 404 by the decode pool's routing, with no prefill leg.
    if (state.isAdapter(model) && !state.poolHolds(model, undefined, false)) return false;
    return (state.routerOf(state.servedModel(model), "prefill")?.size ?? 0) > 0;
  }

  /** The decode leg's plan after the prefill leg (or its bypass); a failure is the client's answer. */
  async route(model: string, tokens: readonly number[], signal?: AbortSignal): Promise<Prepared> {
    try {
      return await this.prepare(model, tokens, `${this.d.idPrefix}-pd-${++this.seq}`, signal);
    } catch (err) {
      if (!(err instanceof RunFailed)) throw err;
      const { message, code } = err.failure.body.error;
      return { status: err.failure.status, message, code: String(code ?? "prefill_failed") };
    }
  }

  private async prepare(model: string, tokens: readonly number[], requestId: string, signal?: AbortSignal): Promise<Prepared> {
    const { state } = this.d;
    if (this.d.islBounding !== undefined) return this.conditional(model, tokens, requestId, this.d.islBounding, signal);
    const pre = await runPrefillLeg(this.d, model, tokens, requestId, signal);
    if (!pre.ok) {
      this.aggregated(pre.reason, model);
      const plan = state.route(model, tokens);
      return "status" in plan ? plan : { plan, leg: {} };
    }
    const plan = state.route(model, tokens, undefined, REMOTE_PREFILLED);
    if ("status" in plan) return plan;
    this.counted(pre, plan);
    return { plan, leg: { kvTransferParams: pre.params, route: REMOTE_PREFILLED } };
  }

  /** The decode worker first (credit kept), then bypass or the prefill leg. */
  private async conditional(model: string, tokens: readonly number[], requestId: string, policy: IslBounding, signal?: AbortSignal): Promise<Prepared> {
    const { state } = this.d;
    const pd = this.d.metrics.disagg;
    const plan = state.route(model, tokens);
    if ("status" in plan) return plan;
    if (shouldBypassRemotePrefill({ promptTokens: tokens.length, overlapBlocks: plan.decision.deviceOverlap, blockSize: state.blockSize! }, policy)) {
      pd.bypasses++;
      return { plan, leg: { headers: { [BYPASS_REMOTE_PREFILL]: "true" } } };
    }
    let pre: PrefillOutcome;
    try {
      pre = await runPrefillLeg(this.d, model, tokens, requestId, signal);
    } catch (err) {
      state.finish(plan); // the decode leg never starts
      throw err;
    }
    if (!pre.ok) {
      this.aggregated(pre.reason, model);
      return { plan, leg: {} };
    }
    // The decode worker pulls the prompt instead of computing it: its prefill leaves the load now.
    state.firstToken(plan);
    this.counted(pre, plan);
    return { plan, leg: { kvTransferParams: pre.params, route: REMOTE_PREFILLED_CONDITIONAL } };
  }

  /** A request that runs aggregated: counted by reason; an adapter missing from the prefill pool is also logged (once per adapter). */
  private aggregated(reason: AggregatedReason, model: string): void {
    this.d.metrics.disagg.aggregated[reason]++;
    if (reason !== "adapter_not_on_prefill" || this.adaptersLogged.has(model)) return;
    this.adaptersLogged.add(model);
    this.d.logger?.warn(`LoRA adapter ${model}: no prefill worker holds it; its requests run aggregated on decode workers holding it (kvcr_frontend_disagg_aggregated_total{reason="adapter_not_on_prefill"})`);
  }

  /** A decode leg with transfer params: counted, with the transfer it implies. */
  private counted(pre: Extract<PrefillOutcome, { ok: true }>, plan: RoutePlan): void {
    const pd = this.d.metrics.disagg;
    pd.legs.decode++;
    const ids = pre.params.remote_block_ids;
    const blocks = Array.isArray(ids) ? ids.length : 0;
    pd.transferBlocks.full_prompt += blocks;
    pd.transferBlocks.destination_missing += Math.max(0, blocks - plan.decision.deviceOverlap);
    pd.transferTokens += blocks * (this.d.state.blockSize ?? 0);
  }
}
