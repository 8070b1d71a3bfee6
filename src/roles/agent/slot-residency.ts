// One agent slot's residency and normalization, pure (no sockets, no timers, no clock):
// applies decoded vLLM KV-event batches, keyed by the publisher's raw block hashes, and emits the
// normalized router events. Router hashes come from the blocks' own token ids (the block hasher's
// local hash, sequence hash chained from the parent's router hash; a LoRA adapter's blocks (lora_name)
// seed their local hashes with the adapter, as the router does); raw hashes are only names.
//
// Storage is flat and reused (the mocker's U64Map style): raw hash → entry index in a U64Map keyed
// by the hash's two words; per entry its router seq / local hash, framework refcounts per tier
// (worker domain) and a CacheOwner bit per tier (`kvcr` domain, set-like). A router block is
// present in a tier while either domain holds it, so a block held by both is one router block.
// Entries that left every tier stay known as parents for the last PARENT_WINDOW departures (a
// constructor option, for tests of the window's edge).
import type { BlockHasher } from "../../core/kv/block-hash.ts";
import { grown } from "../../core/kv/grown.ts";
import { U64Map } from "../../core/kv/u64-map.ts";
import { FLAT_REMOVED, FLAT_STORED, type FlatBatch } from "../../protocol/kv-events/flat-decode.ts";
import { OWNERSHIP_KVCR } from "../../protocol/kv-events/index.ts";
import type { RouterBlock, RouterEvent, RouterEventHolder, RouterTier } from "../../protocol/router-events.ts";

/** Router tiers by index: 0 device, 1 host, 2 disk. */
export const TIERS: readonly RouterTier[] = ["device", "host", "disk"];
const TIER_COUNT = 3;
/**
 * Departed blocks still resolvable as parents: the same window as the engine's released-block FIFO
 * (core/kv/block-token-registry.ts); the memory this costs is in docs/DECISIONS.md.
 */
export const PARENT_WINDOW = 16_384;

/** vLLM medium → tier index; -1 for a medium we do not know (a malformed event). */
export function tierOfMedium(medium: string | null): number {
  switch (medium) {
    case null:
    case "GPU":
      return 0;
    case "CPU":
    case "CPU_PINNED":
      return 1;
    case "DISK":
    case "STORAGE":
      return 2;
    default:
      return -1;
  }
}

/**
 * The fault of a batch (one quarantines the slot), checked before anything is applied so a faulty batch
 * changes nothing: dp rank different from the slot's, unknown ownership, `kvcr` on a device medium.
 */
export function batchFault(batch: FlatBatch, dpRank: number): string | undefined {
  if (batch.dataParallelRank !== null && batch.dataParallelRank !== dpRank) {
    return `batch data_parallel_rank ${batch.dataParallelRank} differs from the slot's dp rank ${dpRank}`;
  }
  for (let i = 0; i < batch.count; i++) {
    const ownership = batch.ownership[i];
    if (ownership === undefined) continue;
    if (ownership !== OWNERSHIP_KVCR) return `unknown ownership ${JSON.stringify(ownership)} (expected absent or "kvcr")`;
    if (tierOfMedium(batch.medium[i] ?? null) === 0) return `ownership "kvcr" on device medium ${JSON.stringify(batch.medium[i] ?? null)} (only host or disk media may be CacheOwner-owned)`;
  }
  return undefined;
}

export interface ResidencyCounters {
  /** Block stores and removals applied (the ingest figure of bench/agent-ingest.ts). */
  blockOps: number;
  /** Stored events dropped because the slot does not know their parent. */
  orphanStores: number;
  /** Events dropped for a token count ≠ blocks × block_size, or an unknown medium. */
  malformedEvents: number;
  /** Removals of blocks the slot does not hold in that tier/domain (ignored). */
  unknownRemovals: number;
}

export interface SnapshotBlock {
  seq_hash: string;
  local_hash: string;
}

const INITIAL_ENTRIES = 64;
/** Platform byte order, so DataView writes land where the BigUint64Array view reads. */
const LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export class SlotResidency {
  readonly counters: ResidencyCounters = { blockOps: 0, orphanStores: 0, malformedEvents: 0, unknownRemovals: 0 };
  private map = new U64Map();
  /** Per entry: router seq hash, local hash. Written through `hv`: JSC stores a bigint into a
   *  BigUint64Array element ~2.5× slower than DataView.setBigUint64. */
  private hashes = new BigUint64Array(INITIAL_ENTRIES * 2);
  private hv = new DataView(this.hashes.buffer);
  /** Per entry: the raw hash's two words (the map key), to forget it. */
  private rawWords = new Uint32Array(INITIAL_ENTRIES * 2);
  /** Framework refcount per entry and tier (3 per entry). */
  private fw = new Int32Array(INITIAL_ENTRIES * TIER_COUNT);
  /** CacheOwner bits per entry (1 << tier); 0x80 = entry in use. */
  private bits = new Uint8Array(INITIAL_ENTRIES);
  /** Stamp of the entry's latest departure (0 = resident or free). */
  private departed = new Int32Array(INITIAL_ENTRIES);
  private freeList: number[] = [];
  private used = 0;
  /** Departures a departed entry outlives as a known parent (PARENT_WINDOW unless a test sets it). */
  private readonly parentWindow: number;
  // Departure ring (entry, stamp), grown up to the parent window.
  private ringEntry = new Int32Array(64);
  private ringStamp = new Int32Array(64);
  private ringHead = 0;
  private ringLen = 0;
  private stamp = 0;
  /** Router blocks present per tier (either domain), for /v1/slots and metrics. */
  readonly presentBlocks = new Int32Array(TIER_COUNT);

  constructor(
    readonly holder: RouterEventHolder,
    private readonly hasher: BlockHasher,
    private readonly emit: (event: RouterEvent) => void,
    opts: { parentWindow?: number } = {},
  ) {
    this.parentWindow = opts.parentWindow ?? PARENT_WINDOW;
  }

  /**
   * Applies a fault-free batch's events in order (see batchFault). Consecutive removals are
   * coalesced into one router `removed` event per tier (vLLM sends one BlockRemoved per evicted
   * block; one router event per block would dominate the outbound stream).
   */
  applyBatch(batch: FlatBatch): void {
    for (let i = 0; i < batch.count; i++) {
      const kind = batch.kind[i];
      if (kind === FLAT_REMOVED) {
        this.removed(batch, i);
        continue;
      }
      this.flushRemoved();
      if (kind === FLAT_STORED) this.stored(batch, i);
      else this.clearFramework();
    }
    this.flushRemoved();
  }

  /** Removed blocks per tier not emitted yet (see applyBatch). */
  private readonly gone: (RouterBlock[] | undefined)[] = [undefined, undefined, undefined];

  private flushRemoved(): void {
    for (let t = 0; t < TIER_COUNT; t++) {
      const blocks = this.gone[t];
      if (!blocks) continue;
      this.gone[t] = undefined;
      this.emit({ holder: this.holder, tier: TIERS[t]!, kind: "removed", blocks, parentHash: null });
    }
  }

  /** Drops everything (attach, detach, resync, quarantine) and emits the `cleared` barrier per tier. */
  reset(): void {
    this.map.clear();
    this.hashes = new BigUint64Array(INITIAL_ENTRIES * 2);
    this.hv = new DataView(this.hashes.buffer);
    this.rawWords = new Uint32Array(INITIAL_ENTRIES * 2);
    this.fw = new Int32Array(INITIAL_ENTRIES * TIER_COUNT);
    this.bits = new Uint8Array(INITIAL_ENTRIES);
    this.departed = new Int32Array(INITIAL_ENTRIES);
    this.freeList = [];
    this.used = 0;
    this.ringEntry = new Int32Array(64);
    this.ringStamp = new Int32Array(64);
    this.ringHead = 0;
    this.ringLen = 0;
    this.presentBlocks.fill(0);
    for (const tier of TIERS) this.emit({ holder: this.holder, tier, kind: "cleared", blocks: [], parentHash: null });
  }

  /** Entries known (resident or within the parent window). */
  get knownBlocks(): number {
    return this.map.size;
  }

  /** Departures the ring has room for now: it doubles from 64 up to the parent window. */
  get departureRingCapacity(): number {
    return this.ringEntry.length;
  }

  /** Present router blocks per tier, deduplicated by seq hash and sorted by it (for `GET /v1/snapshot`, docs/http-api.md). */
  snapshot(): Record<RouterTier, SnapshotBlock[]> {
    const out = { device: [] as SnapshotBlock[], host: [] as SnapshotBlock[], disk: [] as SnapshotBlock[] };
    for (let t = 0; t < TIER_COUNT; t++) {
      const byHash = new Map<bigint, bigint>();
      for (let e = 0; e < this.used; e++) if (this.present(e, t)) byHash.set(this.hashes[2 * e]!, this.hashes[2 * e + 1]!);
      const sorted = [...byHash.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      out[TIERS[t]!] = sorted.map((h) => ({ seq_hash: h.toString(), local_hash: byHash.get(h)!.toString() }));
    }
    return out;
  }

  private present(e: number, t: number): boolean {
    const b = this.bits[e]!;
    return (b & 0x80) !== 0 && (this.fw[e * TIER_COUNT + t]! > 0 || (b & (1 << t)) !== 0);
  }

  private resident(e: number): boolean {
    const b = this.bits[e]!;
    const f = e * TIER_COUNT;
    return (b & 7) !== 0 || this.fw[f]! > 0 || this.fw[f + 1]! > 0 || this.fw[f + 2]! > 0;
  }

  private stored(b: FlatBatch, i: number): void {
    const tier = tierOfMedium(b.medium[i] ?? null);
    const n = b.hashCount[i]!;
    const blockSize = b.blockSize[i]!;
    const tokenCount = b.tokenCount[i]!;
    // An adapter named by lora_id alone cannot be hashed as the router does: never index it as the base model's.
    if (tier < 0 || n === 0 || tokenCount !== n * blockSize || b.loraIdOnly[i]) {
      this.counters.malformedEvents++;
      return;
    }
    const words = b.words;
    let parentSeq: bigint | undefined;
    const pk = b.parent[i]!;
    if (pk >= 0) {
      const p = this.map.get(words[2 * pk]!, words[2 * pk + 1]!);
      if (p < 0) {
        this.counters.orphanStores++;
        return;
      }
      parentSeq = this.hashes[2 * p]!;
    }
    const kvcr = b.ownership[i] === OWNERSHIP_KVCR;
    const bit = 1 << tier;
    const start = b.tokenStart[i]!;
    const lora = b.loraName[i] ?? null;
    const hashes = this.hasher.hashBlocks(b.tokens.subarray(start, start + tokenCount), blockSize, parentSeq, lora === null ? undefined : this.hasher.seedOf(lora));
    const first = b.hashStart[i]!;
    let run: RouterBlock[] | undefined;
    let runParent: bigint | null = null;
    for (let j = 0; j < n; j++) {
      const w0 = words[2 * (first + j)]!;
      const w1 = words[2 * (first + j) + 1]!;
      let entry = this.map.get(w0, w1);
      if (entry < 0) {
        entry = this.allocate();
        this.map.setIfAbsent(w0, w1, entry);
        this.rawWords[2 * entry] = w0;
        this.rawWords[2 * entry + 1] = w1;
      }
      const s = hashes.sequence[j]!;
      const l = hashes.local[j]!;
      this.hv.setBigUint64(entry * 16, s, LE);
      this.hv.setBigUint64(entry * 16 + 8, l, LE);
      const was = this.present(entry, tier);
      this.departed[entry] = 0; // resident again: a pending departure of it is stale
      if (kvcr) this.bits[entry] = this.bits[entry]! | bit;
      else this.fw[entry * TIER_COUNT + tier]!++;
      this.counters.blockOps++;
      if (was) {
        if (run) this.emitStored(tier, run, runParent);
        run = undefined;
        continue;
      }
      this.presentBlocks[tier]!++;
      if (!run) {
        run = [];
        runParent = j === 0 ? (parentSeq ?? null) : hashes.sequence[j - 1]!;
      }
      run.push({ seqHash: s, localHash: l });
    }
    if (run) this.emitStored(tier, run, runParent);
  }

  private emitStored(tier: number, blocks: RouterBlock[], parentHash: bigint | null): void {
    this.emit({ holder: this.holder, tier: TIERS[tier]!, kind: "stored", blocks, parentHash });
  }

  private removed(b: FlatBatch, i: number): void {
    const tier = tierOfMedium(b.medium[i] ?? null);
    if (tier < 0) {
      this.counters.malformedEvents++;
      return;
    }
    const kvcr = b.ownership[i] === OWNERSHIP_KVCR;
    const bit = 1 << tier;
    const words = b.words;
    const first = b.hashStart[i]!;
    const n = b.hashCount[i]!;
    for (let j = first; j < first + n; j++) {
      const entry = this.map.get(words[2 * j]!, words[2 * j + 1]!);
      if (entry < 0) {
        this.counters.unknownRemovals++;
        continue;
      }
      const fi = entry * TIER_COUNT + tier;
      if (kvcr ? (this.bits[entry]! & bit) === 0 : this.fw[fi]! === 0) {
        this.counters.unknownRemovals++;
        continue;
      }
      if (kvcr) this.bits[entry] = this.bits[entry]! & ~bit;
      else this.fw[fi]!--;
      this.counters.blockOps++;
      if (!this.present(entry, tier)) {
        this.presentBlocks[tier]!--;
        (this.gone[tier] ??= []).push({ seqHash: this.hashes[2 * entry]!, localHash: this.hashes[2 * entry + 1]! });
        if (!this.resident(entry)) this.depart(entry);
      }
    }
  }

  /** AllBlocksCleared: the framework (worker-domain) residency of every tier; CacheOwner bits stay. */
  private clearFramework(): void {
    const gone: (RouterBlock[] | undefined)[] = [undefined, undefined, undefined];
    for (let entry = 0; entry < this.used; entry++) {
      if ((this.bits[entry]! & 0x80) === 0) continue;
      let had = false;
      for (let t = 0; t < TIER_COUNT; t++) {
        const fi = entry * TIER_COUNT + t;
        if (this.fw[fi]! === 0) continue;
        had = true;
        this.fw[fi] = 0;
        if ((this.bits[entry]! & (1 << t)) === 0) {
          this.presentBlocks[t]!--;
          (gone[t] ??= []).push({ seqHash: this.hashes[2 * entry]!, localHash: this.hashes[2 * entry + 1]! });
        }
      }
      if (had && !this.resident(entry)) this.depart(entry);
    }
    for (let t = 0; t < TIER_COUNT; t++) {
      const blocks = gone[t];
      if (blocks) this.emit({ holder: this.holder, tier: TIERS[t]!, kind: "removed", blocks, parentHash: null });
    }
  }

  private allocate(): number {
    const reused = this.freeList.pop();
    const entry = reused ?? this.used++;
    if (entry >= this.bits.length) {
      const len = this.bits.length * 2;
      this.hashes = grown(this.hashes, len * 2);
      this.hv = new DataView(this.hashes.buffer);
      this.rawWords = grown(this.rawWords, len * 2);
      this.fw = grown(this.fw, len * TIER_COUNT);
      this.bits = grown(this.bits, len);
      this.departed = grown(this.departed, len);
    }
    this.bits[entry] = 0x80;
    const f = entry * TIER_COUNT;
    this.fw[f] = this.fw[f + 1] = this.fw[f + 2] = 0;
    this.departed[entry] = 0;
    return entry;
  }

  /** The entry left every tier: it stays a known parent until parentWindow later departures. */
  private depart(entry: number): void {
    const stamp = ++this.stamp;
    this.departed[entry] = stamp;
    if (this.ringLen === this.parentWindow) {
      const old = this.ringEntry[this.ringHead]!;
      if (this.departed[old] === this.ringStamp[this.ringHead]) this.forget(old);
      this.ringEntry[this.ringHead] = entry;
      this.ringStamp[this.ringHead] = stamp;
      this.ringHead = (this.ringHead + 1) % this.parentWindow;
      return;
    }
    if (this.ringLen === this.ringEntry.length) {
      // Grow only while the ring has not wrapped (head stays 0 until it is parentWindow long).
      const len = Math.min(this.parentWindow, this.ringEntry.length * 2);
      this.ringEntry = grown(this.ringEntry, len);
      this.ringStamp = grown(this.ringStamp, len);
    }
    this.ringEntry[this.ringLen] = entry;
    this.ringStamp[this.ringLen] = stamp;
    this.ringLen++;
  }

  private forget(entry: number): void {
    this.map.delete(this.rawWords[2 * entry]!, this.rawWords[2 * entry + 1]!);
    this.bits[entry] = 0;
    this.departed[entry] = 0;
    this.freeList.push(entry);
  }
}
