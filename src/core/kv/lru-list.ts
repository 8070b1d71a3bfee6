// Intrusive doubly linked list over slot indices 0..capacity-1 (typed arrays, no per-node
// objects): the LRU order of G1's free pool and of G2. Head = least recently used.

const NONE = -1;

export class LruList {
  private readonly prev: Int32Array;
  private readonly next: Int32Array;
  private readonly member: Uint8Array;
  private head = NONE;
  private tail = NONE;
  size = 0;

  constructor(capacity: number) {
    this.prev = new Int32Array(capacity).fill(NONE);
    this.next = new Int32Array(capacity).fill(NONE);
    this.member = new Uint8Array(capacity);
  }

  has(slot: number): boolean {
    return this.member[slot] === 1;
  }

  /** Most recently used end. */
  pushBack(slot: number): void {
    this.member[slot] = 1;
    this.prev[slot] = this.tail;
    this.next[slot] = NONE;
    if (this.tail === NONE) this.head = slot;
    else this.next[this.tail] = slot;
    this.tail = slot;
    this.size++;
  }

  /** Least recently used end (taken first). */
  pushFront(slot: number): void {
    this.member[slot] = 1;
    this.next[slot] = this.head;
    this.prev[slot] = NONE;
    if (this.head === NONE) this.tail = slot;
    else this.prev[this.head] = slot;
    this.head = slot;
    this.size++;
  }

  remove(slot: number): void {
    const p = this.prev[slot]!;
    const n = this.next[slot]!;
    if (p === NONE) this.head = n;
    else this.next[p] = n;
    if (n === NONE) this.tail = p;
    else this.prev[n] = p;
    this.member[slot] = 0;
    this.size--;
  }

  /** Removes and returns the least recently used slot, or -1 when empty. */
  popFront(): number {
    const slot = this.head;
    if (slot !== NONE) this.remove(slot);
    return slot;
  }

  /** Slots from least to most recently used (tests and inspection only). */
  toArray(): number[] {
    const out: number[] = [];
    for (let s = this.head; s !== NONE; s = this.next[s]!) out.push(s);
    return out;
  }
}
