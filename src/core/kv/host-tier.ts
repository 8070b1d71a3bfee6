// G2 (host) tier of one rank: a fixed number of host blocks keyed by sequence hash, LRU
// eviction. An entry is pending while its device-to-host copy is in flight (it holds a slot but
// is not resident and cannot be evicted) and pinned while a host-to-device load reads it (a load
// may pin a pending entry: it waits for the copy to land).
// Storage grows with the slots used, not the capacity (as G1's does): a capacity of billions
// costs nothing until blocks land, and a process may run 1,024 ranks.
import { LruList } from "./lru-list.ts";
import { SPLIT, splitU64, U64Map } from "./u64-map.ts";
import { grown } from "./grown.ts";

const FREE = 0;
const PENDING = 1;
const RESIDENT = 2;
/** A pending entry whose store was dropped while a load pinned it: freed at the last unpin. */
const DROPPED = 3;

export class HostTier {
  readonly capacity: number;
  private readonly byHash = new U64Map();
  /** Per slot used so far (grown as `fresh` advances): hash (also as u32 words), state, pins. */
  private slotHash: BigUint64Array;
  private slotWords: Uint32Array;
  private state: Uint8Array;
  private pins: Int32Array;
  /** Pending entries: when their copy lands (ms). */
  private landsAtMs: Float64Array;
  /** Resident, unpinned entries; head = least recently used. */
  private readonly lru: LruList;
  /** Slots freed by dropped stores; [fresh, capacity) were never used. */
  private readonly freeSlots: number[] = [];
  private fresh = 0;
  residentBlocks = 0;
  /** Entries a host-to-device load is reading (0 once every load landed or was abandoned). */
  pinnedBlocks = 0;

  constructor(capacity: number) {
    this.capacity = capacity;
    const initial = Math.min(capacity, 64);
    this.slotHash = new BigUint64Array(initial);
    this.slotWords = new Uint32Array(this.slotHash.buffer);
    this.state = new Uint8Array(initial);
    this.pins = new Int32Array(initial);
    this.landsAtMs = new Float64Array(initial);
    this.lru = new LruList(capacity);
  }

  /** Slots allocated so far (tests: storage follows use, not capacity). */
  get allocatedSlots(): number {
    return this.state.length;
  }

  /** Slots holding a pending or resident entry. */
  get usedBlocks(): number {
    return this.fresh - this.freeSlots.length;
  }

  /** True when `hash` is pending or resident (so no new copy is needed). */
  has(hash: bigint): boolean {
    return this.byHash.hasBig(hash);
  }

  /** Resident slot of the hash with words (w0, w1), or -1 (pending entries are not visible). */
  residentSlot(w0: number, w1: number): number {
    const slot = this.byHash.get(w0, w1);
    return slot !== -1 && this.state[slot] === RESIDENT ? slot : -1;
  }

  /** Slot of the hash (w0, w1) if resident or pending (its copy in flight), or -1. */
  lookupSlot(w0: number, w1: number): number {
    return this.byHash.get(w0, w1);
  }

  isResident(slot: number): boolean {
    return this.state[slot] === RESIDENT;
  }

  isPending(slot: number): boolean {
    return this.state[slot] === PENDING;
  }

  /** When the pending copy into `slot` lands. */
  pendingLandsAtMs(slot: number): number {
    return this.landsAtMs[slot]!;
  }

  setPendingLandsAt(slot: number, landsAtMs: number): void {
    this.landsAtMs[slot] = landsAtMs;
  }

  /** A lookup hit `slot`: a resident, unpinned entry becomes most recently used (vLLM's touch). */
  touch(slot: number): void {
    if (!this.lru.has(slot)) return;
    this.lru.remove(slot);
    this.lru.pushBack(slot);
  }

  /**
   * Reserves a slot for an incoming copy of `hash` (pending). Evicts the LRU resident entry
   * when full, pushing its hash onto `evicted`. Returns -1 when every slot is pending or pinned.
   */
  reserve(hash: bigint, evicted: bigint[]): number {
    let slot = this.freeSlots.pop() ?? (this.fresh < this.capacity ? this.fresh++ : undefined);
    if (slot === undefined) {
      const victim = this.lru.popFront();
      if (victim === -1) return -1;
      this.byHash.delete(this.slotWords[2 * victim]!, this.slotWords[2 * victim + 1]!);
      this.residentBlocks--;
      evicted.push(this.slotHash[victim]!);
      slot = victim;
    } else if (slot >= this.state.length) this.grow();
    splitU64(hash);
    this.byHash.set(SPLIT[0]!, SPLIT[1]!, slot);
    this.slotHash[slot] = hash;
    this.state[slot] = PENDING;
    return slot;
  }

  /** The copy into `slot` landed: the entry becomes resident and most recently used. */
  land(slot: number): void {
    this.state[slot] = RESIDENT;
    this.residentBlocks++;
    if (this.pins[slot] === 0) this.lru.pushBack(slot);
  }

  /** Abandons a pending entry (its store event was dropped): no residency ever existed. */
  dropPending(slot: number): void {
    this.byHash.delete(this.slotWords[2 * slot]!, this.slotWords[2 * slot + 1]!);
    if (this.pins[slot]! > 0) {
      this.state[slot] = DROPPED; // a load waiting on it sees it is not resident at its last unpin
      return;
    }
    this.state[slot] = FREE;
    this.freeSlots.push(slot);
  }

  hashOf(slot: number): bigint {
    return this.slotHash[slot]!;
  }

  /** A load starts reading `slot`: it cannot be evicted until unpinned. */
  pin(slot: number): void {
    if (this.pins[slot]!++ === 0) {
      if (this.lru.has(slot)) this.lru.remove(slot);
      this.pinnedBlocks++;
    }
  }

  /** A load finished (or was abandoned); the entry becomes most recently used again. */
  unpin(slot: number): void {
    if (--this.pins[slot]! === 0) {
      this.pinnedBlocks--;
      if (this.state[slot] === RESIDENT) this.lru.pushBack(slot);
      else if (this.state[slot] === DROPPED) {
        this.state[slot] = FREE;
        this.freeSlots.push(slot);
      }
    }
  }

  residentHashes(): bigint[] {
    const out: bigint[] = [];
    this.byHash.forEach((hash, slot) => {
      if (this.state[slot] === RESIDENT) out.push(hash);
    });
    return out;
  }

  /** Resident hashes from least to most recently used, pinned ones excluded (tests). */
  lruOrder(): bigint[] {
    return this.lru.toArray().map((s) => this.slotHash[s]!);
  }

  private grow(): void {
    const len = Math.min(this.capacity, this.state.length * 2);
    this.slotHash = grown(this.slotHash, len);
    this.slotWords = new Uint32Array(this.slotHash.buffer);
    this.state = grown(this.state, len);
    this.pins = grown(this.pins, len);
    this.landsAtMs = grown(this.landsAtMs, len);
  }
}
