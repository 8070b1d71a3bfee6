// vLLM KV-event batch types, camelCase in TypeScript. Wire names are vLLM's snake_case:
// blockHashes=block_hashes, parentBlockHash=parent_block_hash, tokenIds=token_ids,
// blockSize=block_size, loraId=lora_id, loraName=lora_name, extraKeys=extra_keys,
// groupIdx=group_idx, kvCacheSpecKind=kv_cache_spec_kind,
// kvCacheSpecSlidingWindow=kv_cache_spec_sliding_window, sessionId=session_id,
// dataParallelRank=data_parallel_rank; type, medium, locality, ownership, ts, events unchanged.
import type { MsgpackValue } from "../msgpack.ts";

export const VllmKvEventType = {
  BlockStored: "BlockStored",
  BlockRemoved: "BlockRemoved",
  AllBlocksCleared: "AllBlocksCleared",
} as const;
export type VllmKvEventType = (typeof VllmKvEventType)[keyof typeof VllmKvEventType];

/**
 * vLLM's medium strings: G1 (device), and G2 as Dynamo's mocker writes it (pinned host memory)
 * or as vLLM's OffloadingConnector writes it (`CPU`).
 */
export const Medium = { Gpu: "GPU", CpuPinned: "CPU_PINNED", Cpu: "CPU" } as const;
export type Medium = (typeof Medium)[keyof typeof Medium];
/** The media a host (G2) event can carry (`--host-kv-events-medium`). */
export type HostMedium = typeof Medium.CpuPinned | typeof Medium.Cpu;

/** `ownership` value of CacheOwner-domain (KVCR) events; absent = framework-owned. */
export const OWNERSHIP_KVCR = "kvcr";

/**
 * One block's extra hash keys (MM identifiers, LoRA name, cache salt, ...) as vLLM sends them: a
 * tuple of plain values, or null when the block has none. Ints of 64-bit wire form are bigint.
 */
export type ExtraKeys = readonly MsgpackValue[] | null;

/**
 * Blocks entered a cache tier. Fields without `?` are always on the wire (null included); fields
 * with `?` are omitted when absent (and decoding a present-but-nil one yields absent).
 */
export interface BlockStored {
  readonly type: "BlockStored";
  /** Sequence hashes (chained over the parent), u64. */
  readonly blockHashes: readonly bigint[];
  readonly parentBlockHash: bigint | null;
  /** The stored blocks' tokens, `blockHashes.length × blockSize` of them when produced by vLLM. */
  readonly tokenIds: readonly number[];
  /** Tokens per block. */
  readonly blockSize: number;
  /** Deprecated in vLLM (lora_name replaces it), still always written. */
  readonly loraId: number | null;
  readonly medium: string | null;
  readonly loraName: string | null;
  /** One entry per block in blockHashes. */
  readonly extraKeys?: readonly ExtraKeys[];
  readonly groupIdx?: number;
  readonly kvCacheSpecKind?: string;
  readonly kvCacheSpecSlidingWindow?: number;
  readonly locality?: string;
  readonly ownership?: string;
  readonly sessionId?: string;
}

/** Blocks left a cache tier. */
export interface BlockRemoved {
  readonly type: "BlockRemoved";
  readonly blockHashes: readonly bigint[];
  readonly medium: string | null;
  readonly groupIdx?: number;
  readonly locality?: string;
  readonly ownership?: string;
}

/** Every block of the source was dropped. */
export interface AllBlocksCleared {
  readonly type: "AllBlocksCleared";
}

export type VllmKvEvent = BlockStored | BlockRemoved | AllBlocksCleared;

/** One published payload: `[ts, events, data_parallel_rank]` on the wire. */
export interface VllmKvEventBatch {
  /** Unix time in seconds (float). */
  readonly ts: number;
  readonly events: readonly VllmKvEvent[];
  /** null = not sent (older vLLM): encoded as a two-element batch. */
  readonly dataParallelRank: number | null;
}
