// G2 (host) tier of one rank: a fixed number of host blocks keyed by sequence hash, LRU
// eviction. An entry is pending while its device-to-host copy is in flight (it holds a slot but
// is not resident and cannot be evicted) and pinned while a host-to-device load reads it.
import { LruList } from "./lru-list.ts";

const FREE = 0;
const PENDING = 1;
const RESIDENT = 2;

export class HostTier {
  readonly capacity: number;
  private readonly byHash = new Map<bigint, number>();
  private readonly slotHash: BigUint64Array;
  private readonly state: Uint8Array;
  private readonly pins: Int32Array;
  /** Resident, unpinned entries; head = least recently used. */
  private readonly lru: LruList;
  /** Slots freed by dropped stores; [fresh, capacity) were never used. */
  private readonly freeSlots: number[] = [];
  private fresh = 0;
  residentBlocks = 0;

  constructor(capacity: number) {
    this.capacity = capacity;
    this.slotHash = new BigUint64Array(capacity);
    this.state = new Uint8Array(capacity);
    this.pins = new Int32Array(capacity);
    this.lru = new LruList(capacity);
  }

  /** Slots holding a pending or resident entry. */
  get usedBlocks(): number {
    return this.fresh - this.freeSlots.length;
  }

  /** True when `hash` is pending or resident (so no new copy is needed). */
  has(hash: bigint): boolean {
    return this.byHash.has(hash);
  }

  /** Resident slot of `hash`, or -1 (pending entries are not visible to lookups). */
  residentSlot(hash: bigint): number {
    const slot = this.byHash.get(hash);
    return slot !== undefined && this.state[slot] === RESIDENT ? slot : -1;
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
      const old = this.slotHash[victim]!;
      this.byHash.delete(old);
      this.residentBlocks--;
      evicted.push(old);
      slot = victim;
    }
    this.byHash.set(hash, slot);
    this.slotHash[slot] = hash;
    this.state[slot] = PENDING;
    return slot;
  }

  /** The copy into `slot` landed: the entry becomes resident and most recently used. */
  land(slot: number): void {
    this.state[slot] = RESIDENT;
    this.residentBlocks++;
    this.lru.pushBack(slot);
  }

  /** Abandons a pending entry (its store event was dropped): no residency ever existed. */
  dropPending(slot: number): void {
    this.byHash.delete(this.slotHash[slot]!);
    this.state[slot] = FREE;
    this.freeSlots.push(slot);
  }

  hashOf(slot: number): bigint {
    return this.slotHash[slot]!;
  }

  /** A load starts reading `slot`: it cannot be evicted until unpinned. */
  pin(slot: number): void {
    if (this.pins[slot]!++ === 0) this.lru.remove(slot);
  }

  /** A load finished (or was abandoned); the entry becomes most recently used again. */
  unpin(slot: number): void {
    if (--this.pins[slot]! === 0) this.lru.pushBack(slot);
  }

  /** Drops every entry (prefix-cache reset). Returns the resident hashes. */
  clear(): bigint[] {
    const resident: bigint[] = [];
    for (const [hash, slot] of this.byHash) if (this.state[slot] === RESIDENT) resident.push(hash);
    this.byHash.clear();
    this.state.fill(FREE);
    this.pins.fill(0);
    while (this.lru.popFront() !== -1);
    this.freeSlots.length = 0;
    this.fresh = 0;
    this.residentBlocks = 0;
    return resident;
  }

  residentHashes(): bigint[] {
    const out: bigint[] = [];
    for (const [hash, slot] of this.byHash) if (this.state[slot] === RESIDENT) out.push(hash);
    return out;
  }

  /** Resident hashes from least to most recently used, pinned ones excluded (tests). */
  lruOrder(): bigint[] {
    return this.lru.toArray().map((s) => this.slotHash[s]!);
  }
}
