// What a disaggregated request's decode leg carries to its worker, and how its attempts reroute:
// the prefill reply's kv_transfer_params (vLLM NixlConnector's), the conditional-disaggregation
// marker for a request prefilled locally, and the decode pricing of a retry (load only).
import type { LegQuery } from "../route-plan.ts";

/** Dynamo's request annotation for a request conditional disaggregation sends straight to a decode worker; here an HTTP header. */
export const BYPASS_REMOTE_PREFILL = "x-bypass-remote-prefill";

export interface DecodeLeg {
  /** The prefill reply's params, passed on to the decode worker (which pulls the prompt's KV). */
  kvTransferParams?: Record<string, unknown>;
  /** Extra headers on the worker request (the bypass marker). */
  headers?: Record<string, string>;
  /** How a retry or migration before the first token is routed (the first attempt's pricing). */
  route?: LegQuery;
}

/** The decode pool's pricing of a leg whose prompt KV comes from a prefill worker: load only, no prefill counted (Dynamo's). */
export const REMOTE_PREFILLED: LegQuery = { overlapCredit: 0, trackPrefillTokens: false };
/** With conditional disaggregation, decode routing keeps its overlap credit (Dynamo's); only the prefill is not counted. */
export const REMOTE_PREFILLED_CONDITIONAL: LegQuery = { trackPrefillTokens: false };
