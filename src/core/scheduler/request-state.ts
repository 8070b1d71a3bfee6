// One request inside an engine: its tokens (prompt then generated), how far its KV is
// computed, the G1 cells it holds and the hashes of its full blocks. Mutated only by the
// scheduler and the KV manager of the engine that owns it.

import { BLOCK_HASH_SEED } from "../kv/block-hash.ts";

export const RequestPhase = {
  waiting: 0,
  /** Admitted; waiting for a host-to-device load of its G2 prefix (or a remote prefill's pull) to land. */
  loading: 1,
  running: 2,
  finished: 3,
} as const;
export type RequestPhase = (typeof RequestPhase)[keyof typeof RequestPhase];

export class RequestState {
  /** Prompt then generated tokens; capacity promptLen + maxTokens. */
  readonly tokens: Uint32Array;
  /** Sequence and local hashes of full blocks [0, numHashed). */
  readonly seqHashes: BigUint64Array;
  readonly localHashes: BigUint64Array;
  /** seqHashes as u32 word pairs (same storage): map lookups without boxing a bigint. */
  readonly seqWords: Uint32Array;
  numHashed = 0;
  numOutput = 0;
  /** Tokens whose KV is computed (or loaded) in the cells held. */
  numComputed = 0;
  /** G1 cells held, in sequence order. */
  blocks: number[] = [];
  /** Leading blocks whose content is final and registered in G1 (or a duplicate of a cached one). */
  numCommitted = 0;
  /** Blocks [0, offloadCursor) were already considered for a device-to-host copy. */
  offloadCursor = 0;
  phase: RequestPhase = RequestPhase.waiting;
  /** Loading phase: when the host-to-device load lands, and the G2 cells it pins. */
  loadUntilMs = 0;
  loadHostCells: number[] = [];
  /** First admission only (vLLM reports the prompt's cached tokens once). */
  cachedTokens = -1;
  hostLoadedTokens = 0;
  /** The current admission set cachedTokens (its first), so a load falling short corrects them. */
  loadReported = false;
  /** Step start (engine clock) of the first admission, -1 before: vLLM's scheduled_ts, for queue and prefill times. */
  scheduledAtMs = -1;
  /** Tokens scheduled in the current step (0 = not scheduled). */
  scheduledTokens = 0;
  /** Engine clock before which the request cannot be scheduled (its per-request cost; 0 = at once). */
  readyAtMs = 0;
  /** Decode side of a disaggregated request: the prompt past its own hits is pulled, not computed (until it lands). */
  remotePrefill = false;
  /** Prompt tokens the current admission pulls, and the pull's size and time (engine clock). */
  remoteTokens = 0;
  remoteBytes = 0;
  remoteTransferMs = 0;
  /** Tokens a landed pull gave (reported once, as vLLM's external_kv_transfer). */
  remoteLoadedTokens = 0;
  /** Prefill side: its blocks stay referenced after it finishes, for the decode side to pull. */
  holdBlocks = false;
  /** Output-token key derived from the prompt (see output-tokens.ts). */
  outputKey = 0;
  /** The LoRA adapter the request runs under (undefined: the base model) and its local-hash seed. */
  loraName: string | undefined = undefined;
  hashSeed = BLOCK_HASH_SEED;

  constructor(
    readonly id: string,
    readonly promptLen: number,
    readonly maxTokens: number,
    tokens: Uint32Array,
    maxBlocks: number,
  ) {
    this.tokens = tokens;
    // One buffer for both hash columns: an ArrayBuffer per request is a native allocation the collector must also free.
    const hashes = new ArrayBuffer(16 * maxBlocks);
    this.seqHashes = new BigUint64Array(hashes, 0, maxBlocks);
    this.localHashes = new BigUint64Array(hashes, 8 * maxBlocks, maxBlocks);
    this.seqWords = new Uint32Array(hashes, 0, 2 * maxBlocks);
  }

  /** Tokens known so far: the prompt plus every generated token (the last one not yet computed). */
  get length(): number {
    return this.promptLen + this.numOutput;
  }

  /** Prompt (and, after a preemption, recomputed output) fully computed: one token per step. */
  get decoding(): boolean {
    return this.numOutput > 0 && this.numComputed === this.promptLen + this.numOutput - 1;
  }
}
