// Prefix subscriptions with reference counts, as libzmq keeps them per SUB socket and per
// publisher peer: a message matches when its first frame starts with any subscribed prefix.

const latin1 = new TextDecoder("latin1");

export class SubscriptionSet {
  /** prefix (as a latin1 key) → reference count */
  private readonly counts = new Map<string, number>();
  /** distinct non-empty prefixes for matching */
  private prefixes: Uint8Array[] = [];
  /** the empty prefix matches everything; kept as a flag for the hot path */
  private all = 0;

  /** Number of distinct prefixes (the empty prefix counts as one). */
  get size(): number {
    return this.counts.size + (this.all > 0 ? 1 : 0);
  }

  /** Adds one reference; true when the prefix is new. */
  add(prefix: Uint8Array): boolean {
    if (prefix.length === 0) return ++this.all === 1;
    const key = latin1.decode(prefix);
    const n = this.counts.get(key) ?? 0;
    this.counts.set(key, n + 1);
    if (n === 0) this.prefixes.push(prefix.slice());
    return n === 0;
  }

  /** Drops one reference; true when the prefix is gone (false if it was not subscribed). */
  remove(prefix: Uint8Array): boolean {
    if (prefix.length === 0) {
      if (this.all === 0) return false;
      return --this.all === 0;
    }
    const key = latin1.decode(prefix);
    const n = this.counts.get(key);
    if (n === undefined) return false;
    if (n > 1) {
      this.counts.set(key, n - 1);
      return false;
    }
    this.counts.delete(key);
    this.prefixes = this.prefixes.filter((p) => latin1.decode(p) !== key);
    return true;
  }

  clear(): void {
    this.counts.clear();
    this.prefixes = [];
    this.all = 0;
  }

  /** Distinct subscribed prefixes (the empty prefix included when subscribed). */
  topics(): Uint8Array[] {
    return this.all > 0 ? [new Uint8Array(0), ...this.prefixes] : [...this.prefixes];
  }

  matches(topic: Uint8Array | undefined): boolean {
    if (this.all > 0) return true;
    const prefixes = this.prefixes;
    if (prefixes.length === 0 || topic === undefined) return false;
    outer: for (let i = 0; i < prefixes.length; i++) {
      const p = prefixes[i]!;
      if (p.length > topic.length) continue;
      for (let j = 0; j < p.length; j++) if (p[j] !== topic[j]) continue outer;
      return true;
    }
    return false;
  }
}
