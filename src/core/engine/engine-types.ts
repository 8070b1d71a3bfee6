// The public shapes of the mock engine API: requests in, step results and metrics out.
import type { DroppedStore } from "../kv/host-offload.ts";
import type { KvEvent } from "../kv/kv-events.ts";
import type { TransferOp } from "../kv/transfer-lane.ts";

export interface EngineRequest {
  /** Unique among the engine's unfinished requests. */
  id: string;
  /** Prompt token ids (u32). */
  tokenIds: ArrayLike<number>;
  /** Engine clock when it arrived (default: the last step's start): a profile's per-request cost counts from here. */
  arrivalMs?: number;
  /** Output tokens to generate (≥ 1); the request finishes with exactly this many. */
  maxTokens: number;
  /**
   * Zero-copy for in-process callers: tokenIds is a Uint32Array view whose underlying buffer has
   * room for maxTokens more entries right after it, allocated for this request; the engine adopts
   * it and writes generated tokens there. Without room it falls back to copying.
   */
  adoptTokens?: boolean;
  /**
   * The LoRA adapter the request runs under (absent: the base model): it seeds the local hash of
   * every block (block-hash.ts seedOf), so its blocks are its own, and names them in KV events.
   */
  loraName?: string;
  /** Precomputed full-block hashes of the prompt at this engine's block size, under its adapter (saves rehashing). */
  promptHashes?: { readonly sequence: BigUint64Array; readonly local: BigUint64Array };
  /**
   * A prefill worker's do_remote_decode request: when it finishes, its blocks stay referenced for
   * a decode worker to pull (FinishedRequest.heldBlockIds) until releaseHeld (vLLM's delayed free).
   */
  holdBlocks?: boolean;
  /**
   * A decode worker's do_remote_prefill request: after its own prefix hits, the rest of the prompt
   * is loaded from the prefill worker (the load takes the transfer time, no prefill compute).
   */
  remotePrefill?: boolean;
}

export type AddResult = { ok: true } | { ok: false; reason: string };

export interface TokenOut {
  requestId: string;
  tokenId: number;
}

/**
 * A request's first output token in this step, with what vLLM reports about it then (its prompt's
 * cache tiers and when it was first scheduled): the mocker's metrics read it, the engine keeps nothing.
 */
export interface FirstToken {
  requestId: string;
  promptTokens: number;
  /** G1 hits plus G2 loads at first admission. */
  cachedTokens: number;
  hostLoadedTokens: number;
  /** The part of cachedTokens pulled from a prefill worker. */
  remoteLoadedTokens?: number;
  /** Start (engine clock) of the step that first admitted it. */
  scheduledAtMs: number;
}

export interface FinishedRequest {
  requestId: string;
  promptTokens: number;
  /** Prompt tokens not recomputed at first admission: G1 hits plus G2 loads (vLLM's num_cached_tokens). */
  cachedTokens: number;
  /** The part of cachedTokens loaded from the host tier. */
  hostLoadedTokens: number;
  completionTokens: number;
  /** Prompt tokens loaded from a prefill worker (vLLM counts them as external_kv_transfer). */
  remoteLoadedTokens?: number;
  /** holdBlocks requests: the G1 block ids still referenced, in sequence order (NixlConnector's remote_block_ids). */
  heldBlockIds?: number[];
}

/** A remote prefill's KV landed in this step: what was pulled and how long it took (engine clock). */
export interface RemoteLoad {
  requestId: string;
  /** Prompt tokens it made this engine skip. */
  tokens: number;
  /** Bytes the transfer was timed on (the whole prompt or only the missing blocks, by timing mode). */
  bytes: number;
  transferMs: number;
}

export interface StepResult {
  /** Simulated duration of the step (speedup applied), including any wait for a d2h fence. */
  durationMs: number;
  /** Requests that computed in this step; 0 = nothing to do now (see MockEngine.nextWakeMs). */
  scheduledRequests: number;
  /** KV events in order, as of the step's end. */
  events: readonly KvEvent[];
  /** One token per request that produced one this step, in scheduling order. */
  tokens: readonly TokenOut[];
  finished: readonly FinishedRequest[];
  /** G1↔G2 copies submitted in this step (absent when none): vLLM's offloading-connector transfers. */
  transfers?: { d2h: TransferOp[]; h2d: TransferOp[] };
  /** Requests whose first token is in `tokens` (absent when none). */
  firstTokens?: FirstToken[];
  /** Remote prefill loads that landed in this step (absent when none). */
  remoteLoads?: RemoteLoad[];
  /** Host stores refused in this step (token ids unrecoverable); log them. */
  dropped?: DroppedStore[];
}

export interface EngineMetrics {
  waitingRequests: number;
  runningRequests: number;
  /** Of runningRequests, those waiting for a G2 prefix load to land (vLLM keeps these waiting, deferred). */
  loadingRequests: number;
  /** Of waitingRequests, those the last admission skipped for the LoRA adapter budget (vLLM's deferred). */
  loraDeferredRequests: number;
  activeBlocks: number;
  gpuBlocks: number;
  /** activeBlocks / gpuBlocks. */
  gpuCacheUsage: number;
  gpuCachedBlocks: number;
  hostBlocks: number;
  hostUsedBlocks: number;
  hostResidentBlocks: number;
  hostCacheUsage: number;
  prefixQueryTokens: number;
  /** G1 hits plus G2 loads. */
  prefixHitTokens: number;
  prefixHostHitTokens: number;
  prefixHitRate: number;
  preemptions: number;
  eventsEmitted: number;
  eventsDropped: number;
  hostOffloadSkippedBlocks: number;
  /** G2 blocks whose device-to-host copy landed (host `stored` blocks), since start. */
  hostBlocksStored: number;
  steps: number;
  lastStepMs: number;
  totalStepMs: number;
  finishedRequests: number;
  generatedTokens: number;
  /** Finished holdBlocks requests whose blocks wait to be pulled, and the blocks they hold. */
  heldRequests: number;
  heldBlocks: number;
}
