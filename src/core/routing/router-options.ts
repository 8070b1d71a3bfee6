// What the router is given and gives back: its options (mode, cost weights, busy thresholds), a
// candidate's description, a routing query and its decision. Apart from router.ts, so callers that
// only configure or read decisions need not open the router itself.
import type { RouterMode } from "../../protocol/router-modes.ts";
import type { ActiveRequest } from "./active-load.ts";

export interface RouteQuery {
  /** Full-block sequence hashes of the prompt at the workers' block size (kept until the request finishes). */
  seqHashes: ArrayLike<bigint>;
  promptTokens: number;
  blockSize: number;
  /** Monotonic ms: approximate mode expires its predicted blocks by it. */
  nowMs?: number;
  /** Rank ids this request may not go to (the workers its earlier attempts failed on); read only when non-empty. */
  exclude?: ReadonlySet<number>;
  /** kv: this request's device-block credit instead of the router's (Dynamo's per-request override; 0 = load only). */
  overlapCredit?: number;
  /** false: the request adds no outstanding prefill (a decode leg whose prompt KV is pulled, not computed). Default true. */
  trackPrefillTokens?: boolean;
}

export interface RouteDecision {
  /** The chosen candidate's rank id. */
  rankId: number;
  cost: number;
  deviceOverlap: number;
  hostOverlap: number;
  diskOverlap: number;
  /** The chosen candidate's cost terms before this request was added (decision logs). */
  prefillBlocks: number;
  activeBlocks: number;
  newBlocks: number;
  activePrefillTokens: number;
  /** This request's load on the candidate: pass to firstToken() and finish(). */
  request: ActiveRequest;
}

/** Every worker is busy (all of its ranks over a threshold): the request is shed. */
export const OVERLOADED = "overloaded";

/** Strict `>` per (worker, rank); a worker is busy when all of its ranks are. Unset = never busy. */
export interface BusyThresholds {
  /** Share of the rank's G1 blocks held by in-flight prompts (distinct blocks). */
  activeDecodeBlocks?: number;
  activePrefillTokens?: number;
  /** Share of the rank's max_num_batched_tokens (ranks that do not advertise it are not judged by it). */
  activePrefillTokensFrac?: number;
}

export interface RouterOptions {
  mode: RouterMode;
  /** kv: weight of prefill blocks against decode blocks (default 1). */
  prefillLoadScale?: number;
  /** kv: a device-cached block's credit against prefill (default 1). */
  overlapScoreCredit?: number;
  /** kv: a host / disk block's share of a device block (defaults 0.75 / 0.25, as Dynamo). */
  hostWeight?: number;
  diskWeight?: number;
  /** kv: 0 = lowest cost; > 0 samples p ∝ exp(−(c − min) / ((max − min) × T)). */
  temperature?: number;
  busy?: BusyThresholds;
  /** kv without KV events: each decision is written into the index, expiring after this many ms. */
  approximateTtlMs?: number;
  /**
   * Hold requests (the caller queues them) while every candidate's outstanding prefill exceeds
   * this share of its max_num_batched_tokens (Dynamo's --router-queue-threshold).
   */
  queueThreshold?: number;
  /**
   * false: a routed request's blocks are not counted as the candidate's active load, only its
   * prefill tokens (Dynamo's prefill router: prefill workers run no decode). Default true.
   */
  trackActiveBlocks?: boolean;
}

export interface CandidateInfo {
  /** G1 blocks of the rank (the decode-blocks threshold's denominator). */
  capacityBlocks: number;
  /** Ranks of one worker share this key (a small non-negative integer, e.g. the worker's first rank id). */
  worker: number;
  maxNumBatchedTokens?: number;
}
