// What routing a request yields and what it is told afterwards: the chosen (worker, rank) and its
// decision, a refusal, one leg of a disaggregated request, the lifecycle replica sync publishes.
import type { RouteDecision } from "../../core/routing/router-options.ts";
import type { KvHint } from "../../protocol/generate.ts";
import type { WorkerRecord } from "../../protocol/records.ts";

export interface WorkerEntry {
  readonly id: string;
  readonly record: WorkerRecord;
  /** Rank id per dp rank. */
  readonly rankIds: readonly number[];
  /** In-flight requests to this worker: aborted (502) when it vanishes. */
  readonly inflight: Set<{ abort(reason: unknown): void }>;
}

export interface RoutePlan {
  worker: WorkerEntry;
  dpRank: number;
  rankId: number;
  decision: RouteDecision;
  promptTokens: number;
  kvHint?: KvHint;
  decisionMs: number;
  /** The LoRA adapter the request named as its model (it runs under the worker's base model). */
  loraName?: string;
}

export type RouteFailure = { status: number; message: string; code: string };

/** One leg of a disaggregated request: the prefill pool, or a decode leg's load-only pricing (router-options.ts RouteQuery). */
export interface LegQuery {
  pool?: "prefill";
  overlapCredit?: number;
  trackPrefillTokens?: boolean;
}

/** Told as each routed request's load changes (router replica sync publishes it): prefill only while counted, free once. */
export type RequestLifecycle = Record<"routed" | "prefillCompleted" | "freed", (plan: RoutePlan) => void>;
