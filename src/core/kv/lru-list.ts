// Intrusive doubly linked list over cell indices 0..capacity-1 (typed arrays, no per-node
// objects): the LRU order of G1's free pool and of G2. Head = least recently used.
// Links are stored +1 (0 = none) so fresh, zeroed arrays need no fill, and the arrays grow
// with the highest cell used rather than being sized for the whole capacity up front.
import { grown } from "./grown.ts";

export class LruList {
  private prev: Int32Array;
  private next: Int32Array;
  private member: Uint8Array;
  private head = 0;
  private tail = 0;
  size = 0;

  constructor(private readonly capacity: number) {
    const initial = Math.min(capacity, 64);
    this.prev = new Int32Array(initial);
    this.next = new Int32Array(initial);
    this.member = new Uint8Array(initial);
  }

  has(cell: number): boolean {
    return cell < this.member.length && this.member[cell] === 1;
  }

  /** Most recently used end. */
  pushBack(cell: number): void {
    if (cell >= this.member.length) this.grow(cell);
    const id = cell + 1;
    this.member[cell] = 1;
    this.prev[cell] = this.tail;
    this.next[cell] = 0;
    if (this.tail === 0) this.head = id;
    else this.next[this.tail - 1] = id;
    this.tail = id;
    this.size++;
  }

  /** Least recently used end (taken first). */
  pushFront(cell: number): void {
    if (cell >= this.member.length) this.grow(cell);
    const id = cell + 1;
    this.member[cell] = 1;
    this.next[cell] = this.head;
    this.prev[cell] = 0;
    if (this.head === 0) this.tail = id;
    else this.prev[this.head - 1] = id;
    this.head = id;
    this.size++;
  }

  remove(cell: number): void {
    const p = this.prev[cell]!;
    const n = this.next[cell]!;
    if (p === 0) this.head = n;
    else this.next[p - 1] = n;
    if (n === 0) this.tail = p;
    else this.prev[n - 1] = p;
    this.member[cell] = 0;
    this.size--;
  }

  /** Removes and returns the least recently used cell, or -1 when empty. */
  popFront(): number {
    const cell = this.head - 1;
    if (cell !== -1) this.remove(cell);
    return cell;
  }

  /** Cells from least to most recently used (tests and inspection only). */
  toArray(): number[] {
    const out: number[] = [];
    for (let id = this.head; id !== 0; id = this.next[id - 1]!) out.push(id - 1);
    return out;
  }

  private grow(cell: number): void {
    const len = Math.min(this.capacity, Math.max(cell + 1, this.member.length * 2));
    this.prev = grown(this.prev, len);
    this.next = grown(this.next, len);
    this.member = grown(this.member, len);
  }
}

