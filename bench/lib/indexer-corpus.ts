// The indexer bench's workload, built before any timing: a Mooncake trace lengthened and
// duplicated into disjoint hash spaces, split at random over workers, each worker's requests run
// through its own mock engine offline to get the KV events it would publish, and every worker's
// lookups and event batches merged into one deadline-ordered schedule (the method of Dynamo's
// indexer bench; docs/PERFORMANCE.md#indexer-throughput says where ours differs).
import type { BlockHasher } from "../../src/core/kv/block-hash.ts";
import type { KvEvent } from "../../src/core/kv/kv-events.ts";
import { MockEngine } from "../../src/core/engine/mock-engine.ts";
import { createRng } from "../../src/core/random/rng.ts";
import type { TraceRow } from "../../src/core/workload/mooncake-trace.ts";
import type { RouterEvent } from "../../src/protocol/router-events.ts";

export interface CorpusOptions {
  workers: number;
  /** Each trace hash id becomes this many consecutive ids (longer prefix chains, same tree shape). */
  lengthFactor: number;
  /** Copies of the whole trace, each in its own hash-id range (the tree repeated, disjoint). */
  duplicationFactor: number;
  /** Engine and index block size (tokens); the trace's own block is 512 tokens. */
  blockSize: number;
  /** G1 blocks per worker engine. */
  gpuBlocks: number;
  seed: number;
}

export interface CorpusTotals {
  requests: number;
  requestBlocks: number;
  storedEvents: number;
  storedBlocks: number;
  removedEvents: number;
  removedBlocks: number;
  clearedEvents: number;
}

/** Request blocks + stored blocks + removed blocks (a clear counts as an op with no block). */
export const blockOps = (t: CorpusTotals) => t.requestBlocks + t.storedBlocks + t.removedBlocks;

/** The schedule: op k runs at atUs[k] (offset into the window once scaled). */
export interface Corpus {
  workers: number;
  /** Per op: -1 for a lookup, else the index of its event batch in `batches`. */
  batch: Int32Array;
  /** Per op: its worker. */
  worker: Int32Array;
  /** Per op: its deadline as a fraction [0, 1] of the replay window. */
  at: Float64Array;
  /** Lookups: their hashes at hashes[from[k], from[k] + count[k]). */
  from: Int32Array;
  count: Int32Array;
  hashes: BigUint64Array;
  batches: RouterEvent[][];
  totals: CorpusTotals;
}

const TRACE_BLOCK = 512;

/** Hash ids lengthened (id → id × L … id × L + L − 1) then shifted into copy d's range. */
export function expandRow(ids: Uint32Array, lengthFactor: number, copy: number, copyStride: number): Uint32Array {
  const out = new Uint32Array(ids.length * lengthFactor);
  for (let i = 0; i < ids.length; i++) for (let k = 0; k < lengthFactor; k++) out[i * lengthFactor + k] = ids[i]! * lengthFactor + k + copy * copyStride;
  return out;
}

interface Entry {
  t: number;
  batch: number; // -1 = lookup
  from: number;
  count: number;
}

export function buildCorpus(rows: readonly TraceRow[], opts: CorpusOptions, hasher: BlockHasher): Corpus {
  const L = opts.lengthFactor;
  let maxId = 0;
  for (const r of rows) for (const id of r.hashIds) if (id > maxId) maxId = id;
  const copyStride = (maxId + 1) * L;
  if (copyStride * opts.duplicationFactor >= 2 ** 32) throw new RangeError(`duplication factor ${opts.duplicationFactor} overflows 32-bit hash ids (largest id ${maxId})`);
  // Every (copy, row) is one request, given to a worker at random (Dynamo partitions sessions; a
  // Mooncake row is a one-turn session).
  const rng = createRng(opts.seed);
  const perWorker: { row: TraceRow; copy: number }[][] = Array.from({ length: opts.workers }, () => []);
  for (let d = 0; d < opts.duplicationFactor; d++) for (const row of rows) perWorker[Math.floor(rng.next() * opts.workers)]!.push({ row, copy: d });
  const totals: CorpusTotals = { requests: 0, requestBlocks: 0, storedEvents: 0, storedBlocks: 0, removedEvents: 0, removedBlocks: 0, clearedEvents: 0 };
  const batches: RouterEvent[][] = [];
  const hashChunks: BigUint64Array[] = [];
  let hashTotal = 0;
  const timelines: Entry[][] = [];
  for (let w = 0; w < opts.workers; w++) {
    // One engine at a time: a worker's run is independent of every other's.
    const engine = new MockEngine({ blockSize: opts.blockSize, numGpuBlocks: opts.gpuBlocks, numHostBlocks: 0 }, { hasher });
    const reqs = perWorker[w]!.sort((a, b) => a.row.timestampMs - b.row.timestampMs);
    const entries: Entry[] = [];
    const holder = { workerId: `w${w}`, dpRank: 0 };
    const record = (t: number, events: readonly KvEvent[]) => {
      if (events.length === 0) return;
      const out: RouterEvent[] = [];
      for (const e of events) {
        if (e.kind === "cleared") {
          totals.clearedEvents++;
          out.push({ holder, tier: "device", kind: "cleared", blocks: [], parentHash: null });
        } else if (e.kind === "stored") {
          totals.storedEvents++;
          totals.storedBlocks += e.blockHashes.length;
          out.push({ holder, tier: e.tier, kind: "stored", blocks: e.blockHashes.map((h, i) => ({ seqHash: h, localHash: e.localHashes[i]! })), parentHash: e.parentHash });
        } else {
          totals.removedEvents++;
          totals.removedBlocks += e.blockHashes.length;
          out.push({ holder, tier: e.tier, kind: "removed", blocks: e.blockHashes.map((h) => ({ seqHash: h, localHash: 0n })), parentHash: null });
        }
      }
      entries.push({ t, batch: batches.length, from: 0, count: 0 });
      batches.push(out);
    };
    let t = 0;
    let next = 0;
    let id = 0;
    while (next < reqs.length || !engine.idle) {
      while (next < reqs.length && reqs[next]!.row.timestampMs <= t) {
        const { row, copy } = reqs[next++]!;
        const ids = expandRow(row.hashIds, L, copy, copyStride);
        const tokens = new Uint32Array(Math.min(row.inputLength * L, ids.length * TRACE_BLOCK));
        for (let b = 0, at = 0; at < tokens.length; b++, at += TRACE_BLOCK) tokens.fill(ids[b]!, at, Math.min(tokens.length, at + TRACE_BLOCK));
        const h = hasher.hashBlocks(tokens, opts.blockSize);
        // The router's lookup happens as the request arrives, before the engine sees it.
        entries.push({ t, batch: -1, from: hashTotal, count: h.sequence.length });
        hashChunks.push(h.sequence);
        hashTotal += h.sequence.length;
        totals.requests++;
        totals.requestBlocks += h.sequence.length;
        const added = engine.addRequest({ id: String(id++), tokenIds: tokens, maxTokens: Math.max(1, row.outputLength), promptHashes: h });
        if (!added.ok) throw new Error(`worker ${w}: the engine refused a trace request: ${added.reason}`);
      }
      if (engine.idle) {
        if (next < reqs.length) t = Math.max(t, reqs[next]!.row.timestampMs);
        continue;
      }
      const res = engine.step(t);
      if (res.scheduledRequests === 0 && res.events.length === 0) {
        // Nothing could run (no free blocks): wait for the next arrival, or give up on a stuck engine.
        if (next >= reqs.length) throw new Error(`worker ${w}: the engine cannot schedule its remaining requests`);
        t = Math.max(t, reqs[next]!.row.timestampMs);
        continue;
      }
      t += res.durationMs;
      record(t, res.events);
    }
    timelines.push(entries);
  }
  return schedule(timelines, batches, hashChunks, hashTotal, totals, opts.workers);
}

/**
 * Each worker's timeline starts at 0 and is scaled to span [0, 1] of the window; then all are
 * merged by (deadline, lookups before events, worker, order), as Dynamo orders its queue.
 */
function schedule(timelines: Entry[][], batches: RouterEvent[][], chunks: BigUint64Array[], hashTotal: number, totals: CorpusTotals, workers: number): Corpus {
  const all: { at: number; w: number; k: number; e: Entry }[] = [];
  timelines.forEach((entries, w) => {
    if (entries.length === 0) return;
    const t0 = entries[0]!.t;
    const span = Math.max(entries[entries.length - 1]!.t - t0, 1e-9);
    entries.forEach((e, k) => all.push({ at: (e.t - t0) / span, w, k, e }));
  });
  all.sort((a, b) => a.at - b.at || (a.e.batch === -1 ? 0 : 1) - (b.e.batch === -1 ? 0 : 1) || a.w - b.w || a.k - b.k);
  const n = all.length;
  const hashes = new BigUint64Array(hashTotal);
  let at = 0;
  for (const c of chunks) {
    hashes.set(c, at);
    at += c.length;
  }
  const c: Corpus = { workers, batch: new Int32Array(n), worker: new Int32Array(n), at: new Float64Array(n), from: new Int32Array(n), count: new Int32Array(n), hashes, batches, totals };
  all.forEach((x, k) => {
    c.batch[k] = x.e.batch;
    c.worker[k] = x.w;
    c.at[k] = x.at;
    c.from[k] = x.e.from;
    c.count[k] = x.e.count;
  });
  return c;
}
