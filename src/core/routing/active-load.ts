// The router's own view of each (worker, rank)'s load, from the requests it sent there (as
// Dynamo's ActiveSequences): the full-block sequence hashes of every in-flight prompt,
// reference-counted in one index keyed by block hash, so a block shared by several in-flight
// requests counts once and a decision walks the prompt's blocks once for every candidate; and
// the prefill tokens still outstanding (added at routing, dropped at the request's first token).
import { KvIndex } from "../index/kv-index.ts";

/** One routed request's share of its candidate's load, until finish(). */
export interface ActiveRequest {
  readonly source: number;
  /** The source's incarnation when routed: a request outliving a removed source releases nothing. */
  readonly generation: number;
  readonly hashes: ArrayLike<bigint>;
  /** Prefill tokens still counted against the source (0 once the first token arrived). */
  prefillTokens: number;
  done: boolean;
}

export class ActiveLoad {
  private readonly blocks = new KvIndex();
  private prefill = new Float64Array(64);
  private generation = new Int32Array(64);

  /** Sizes the per-source arrays for ids up to `source` (reads by id stay in range). */
  reserve(source: number): void {
    if (source >= this.prefill.length) this.grow(source);
    this.blocks.reserve(source);
  }

  /** Counts a routed request: its prompt blocks as active, its uncached prompt tokens as prefill. */
  add(source: number, hashes: ArrayLike<bigint>, prefillTokens: number): ActiveRequest {
    this.reserve(source);
    this.blocks.acquire(source, hashes);
    this.prefill[source] = this.prefill[source]! + prefillTokens;
    return { source, generation: this.generation[source]!, hashes, prefillTokens, done: false };
  }

  /** The request produced its first token: its prefill is no longer outstanding. */
  firstToken(req: ActiveRequest): void {
    if (req.done || req.prefillTokens === 0) return;
    if (this.current(req)) this.prefill[req.source] = Math.max(0, this.prefill[req.source]! - req.prefillTokens);
    req.prefillTokens = 0;
  }

  /** The request ended (finished, failed or cancelled): all of its load is released. Idempotent. */
  finish(req: ActiveRequest): void {
    if (req.done) return;
    this.firstToken(req);
    req.done = true;
    if (this.current(req)) this.blocks.release(req.source, req.hashes);
  }

  /** The source left routing: its load is forgotten, and late finishes of its requests do nothing. */
  dropSource(source: number): void {
    if (source >= this.prefill.length) return;
    this.blocks.removeSource(source);
    this.prefill[source] = 0;
    this.generation[source] = (this.generation[source]! + 1) | 0;
  }

  /** Distinct blocks of the source's in-flight prompts. */
  activeBlocks(source: number): number {
    return this.blocks.footprint(source);
  }

  activePrefillTokens(source: number): number {
    return source < this.prefill.length ? this.prefill[source]! : 0;
  }

  /** Active blocks by source id (read-only; reserve() the ids read). */
  activeBlocksBySource(): Int32Array {
    return this.blocks.deviceFootprints();
  }

  /** Outstanding prefill tokens by source id (read-only; reserve() the ids read). */
  prefillBySource(): Float64Array {
    return this.prefill;
  }

  /**
   * Per source, the longest prefix of `hashes[0, count)` already active there, at [source] of the
   * returned array (reserve() the ids read) until endPrefixes(), which must come before the next change.
   */
  beginPrefixes(hashes: ArrayLike<bigint>, count: number): Int32Array {
    return this.blocks.beginOverlaps(hashes, count).device;
  }

  endPrefixes(): void {
    this.blocks.endOverlaps();
  }

  private current(req: ActiveRequest): boolean {
    return this.generation[req.source] === req.generation;
  }

  private grow(source: number): void {
    const size = Math.max(source + 1, this.prefill.length * 2);
    const prefill = new Float64Array(size);
    prefill.set(this.prefill);
    this.prefill = prefill;
    const generation = new Int32Array(size);
    generation.set(this.generation);
    this.generation = generation;
  }
}
