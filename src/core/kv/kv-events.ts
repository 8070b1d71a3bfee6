// The engine's own KV events (KvEvent), returned by every step in order. The mocker maps them to
// vLLM's wire events (VllmKvEvent: BlockStored / BlockRemoved / AllBlocksCleared, medium GPU |
// CPU_PINNED or CPU) and the relay to {seq_hash, local_hash} blocks, hence the local hashes here.

export const KvTier = { device: "device", host: "host" } as const;
export type KvTier = (typeof KvTier)[keyof typeof KvTier];

export const KvEventKind = { stored: "stored", removed: "removed", cleared: "cleared" } as const;
export type KvEventKind = (typeof KvEventKind)[keyof typeof KvEventKind];

export interface KvStoredEvent {
  readonly kind: "stored";
  readonly tier: KvTier;
  /** Sequence hash of the block before the first stored one; null at the start of a sequence. */
  readonly parentHash: bigint | null;
  /** Sequence hashes (block-hash.ts), one per block, a parent chain in order. */
  readonly blockHashes: readonly bigint[];
  /** Local hashes, aligned with blockHashes (router events carry both). */
  readonly localHashes: readonly bigint[];
  /** The stored blocks' own token ids: blockHashes.length × blockSize (may be a view; copy to keep). */
  readonly tokenIds: Uint32Array;
  readonly blockSize: number;
  /** The LoRA adapter the blocks were computed under (vLLM's lora_name); absent for the base model. */
  readonly loraName?: string;
}

export interface KvRemovedEvent {
  readonly kind: "removed";
  readonly tier: KvTier;
  readonly blockHashes: bigint[];
}

/** Every block of one tier dropped: a prefix-cache reset clears G1 only (vLLM's reset_prefix_cache). */
export interface KvClearedEvent {
  readonly kind: "cleared";
  readonly tier: KvTier;
}

export type KvEvent = KvStoredEvent | KvRemovedEvent | KvClearedEvent;

const NO_EVENTS: readonly KvEvent[] = Object.freeze([]);

/**
 * Collects one step's events. A G1 removal is one event per block (vLLM's BlockPool emits one
 * BlockRemoved per evicted block); adjacent G2 removals merge into one event (vLLM's offloading
 * manager reports the blocks one store evicted together).
 */
export class KvEventBuffer {
  events: KvEvent[] = [];
  /** Events emitted since creation (a metric). */
  emitted = 0;

  stored(tier: KvTier, parentHash: bigint | null, blockHashes: bigint[], localHashes: bigint[], tokenIds: Uint32Array, blockSize: number, loraName?: string): void {
    this.events.push(loraName === undefined ? { kind: "stored", tier, parentHash, blockHashes, localHashes, tokenIds, blockSize } : { kind: "stored", tier, parentHash, blockHashes, localHashes, tokenIds, blockSize, loraName });
    this.emitted++;
  }

  removed(tier: KvTier, hash: bigint): void {
    const last = this.events[this.events.length - 1];
    if (tier === "host" && last !== undefined && last.kind === "removed" && last.tier === tier) last.blockHashes.push(hash);
    else {
      this.events.push({ kind: "removed", tier, blockHashes: [hash] });
      this.emitted++;
    }
  }

  cleared(tier: KvTier): void {
    this.events.push({ kind: "cleared", tier });
    this.emitted++;
  }

  /** Hands the collected events over and starts a fresh list (a shared empty one when none). */
  take(): readonly KvEvent[] {
    const out = this.events;
    if (out.length === 0) return NO_EVENTS;
    this.events = [];
    return out;
  }
}
