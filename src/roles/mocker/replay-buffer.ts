// The last N published batches of one raw publisher, for the ROUTER replay socket:
// a fixed ring (default 10,000) of (seq, payload) with payloads kept byte-identical to the live ones.

export class ReplayBuffer {
  private readonly seqs: bigint[];
  private readonly payloads: Uint8Array[];
  private start = 0; // ring index of the oldest entry
  private size = 0;

  constructor(readonly capacity = 10_000) {
    this.seqs = new Array(capacity);
    this.payloads = new Array(capacity);
  }

  push(seq: bigint, payload: Uint8Array): void {
    const at = (this.start + this.size) % this.capacity;
    this.seqs[at] = seq;
    this.payloads[at] = payload;
    if (this.size < this.capacity) this.size++;
    else this.start = (this.start + 1) % this.capacity;
  }

  /** Forgets every batch (a publisher whose seq starts over). */
  clear(): void {
    this.start = 0;
    this.size = 0;
    this.payloads.fill(undefined as unknown as Uint8Array);
  }

  get length(): number {
    return this.size;
  }

  /** Batches with seq ≥ fromSeq, oldest first; a start older than the buffer yields all held. */
  *from(fromSeq: bigint): Generator<[seq: bigint, payload: Uint8Array]> {
    for (let i = 0; i < this.size; i++) {
      const at = (this.start + i) % this.capacity;
      const seq = this.seqs[at]!;
      if (seq >= fromSeq) yield [seq, this.payloads[at]!];
    }
  }
}
