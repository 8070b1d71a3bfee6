// A ring-buffer deque of requests: the waiting queue (preempted requests go back to the front).
import type { RequestState } from "./request-state.ts";

export class RequestQueue {
  private buf: (RequestState | undefined)[] = new Array(16);
  private head = 0;
  size = 0;

  pushBack(r: RequestState): void {
    if (this.size === this.buf.length) this.grow();
    this.buf[(this.head + this.size) % this.buf.length] = r;
    this.size++;
  }

  pushFront(r: RequestState): void {
    if (this.size === this.buf.length) this.grow();
    this.head = (this.head - 1 + this.buf.length) % this.buf.length;
    this.buf[this.head] = r;
    this.size++;
  }

  peekFront(): RequestState | undefined {
    return this.size === 0 ? undefined : this.buf[this.head];
  }

  popFront(): RequestState | undefined {
    if (this.size === 0) return undefined;
    const r = this.buf[this.head];
    this.buf[this.head] = undefined;
    this.head = (this.head + 1) % this.buf.length;
    this.size--;
    return r;
  }

  /** Removes one request wherever it is (an abort); false when absent. */
  remove(r: RequestState): boolean {
    const items = this.toArray();
    const i = items.indexOf(r);
    if (i === -1) return false;
    items.splice(i, 1);
    this.buf = new Array(Math.max(16, this.buf.length));
    this.head = 0;
    this.size = 0;
    for (const x of items) this.pushBack(x);
    return true;
  }

  toArray(): RequestState[] {
    const out: RequestState[] = [];
    for (let i = 0; i < this.size; i++) out.push(this.buf[(this.head + i) % this.buf.length]!);
    return out;
  }

  private grow(): void {
    const items = this.toArray();
    this.buf = new Array(this.buf.length * 2);
    this.head = 0;
    for (let i = 0; i < items.length; i++) this.buf[i] = items[i];
  }
}
