// Helpers for engine tests: an engine with Bun's hasher, a loop that steps it on a virtual
// clock, and a residency check of the event log against the engine's own state.
import type { EngineConfig } from "../src/core/engine/engine-config.ts";
import type { StepResult } from "../src/core/engine/engine-types.ts";
import { MockEngine } from "../src/core/engine/mock-engine.ts";
import type { KvEvent } from "../src/core/kv/kv-events.ts";
import { ResidencyReplayer } from "../src/core/kv/residency-replayer.ts";
import { createBlockHasher } from "../src/lib/xxh3.ts";

export const hasher = createBlockHasher();

export function engine(cfg: Partial<EngineConfig>): MockEngine {
  return new MockEngine(cfg, { hasher });
}

export const seq = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

export interface Run {
  steps: StepResult[];
  events: KvEvent[];
  tokens: Map<string, number[]>;
  nowMs: number;
}

/** Steps until no request is left (or maxSteps), advancing time by each step's duration. */
export function runToIdle(e: MockEngine, startMs = 0, maxSteps = 10_000): Run {
  const run: Run = { steps: [], events: [], tokens: new Map(), nowMs: startMs };
  for (let i = 0; i < maxSteps && (e.pendingRequests > 0 || e.nextWakeMs() !== undefined); i++) {
    const r = stepOnce(e, run);
    if (r.scheduledRequests === 0) {
      const wake = e.nextWakeMs();
      if (wake === undefined) break;
      run.nowMs = Math.max(run.nowMs, wake);
    }
  }
  return run;
}

export function stepOnce(e: MockEngine, run: Run): StepResult {
  const r = e.step(run.nowMs);
  run.nowMs += r.durationMs;
  run.steps.push(r);
  run.events.push(...r.events);
  for (const t of r.tokens) {
    const list = run.tokens.get(t.requestId) ?? [];
    list.push(t.tokenId);
    run.tokens.set(t.requestId, list);
  }
  return r;
}

/** Replays `events` and compares the per-tier sets with what the engine holds. */
export function residencyMismatch(e: MockEngine, events: readonly KvEvent[]): string | undefined {
  const rep = new ResidencyReplayer();
  rep.applyAll(events);
  if (rep.anomalies.length > 0) return rep.anomalies.join("; ");
  const st = e.inspect();
  for (const tier of ["device", "host"] as const) {
    const want = new Set(st.resident[tier]);
    const got = rep.tiers[tier];
    if (want.size !== got.size || [...want].some((h) => !got.has(h))) return `${tier}: engine holds ${want.size}, event log says ${got.size}`;
  }
  return undefined;
}

export function eventSummary(events: readonly KvEvent[]): string[] {
  return events.map((e) => (e.kind === "cleared" ? `cleared:${e.tier}` : `${e.kind}:${e.tier}:${e.blockHashes.length}`));
}

/**
 * Checks each stored event's content against the block hashing: rehashing its token ids from its
 * parent must give exactly its sequence and local hashes (so token ids, parent and chain order are
 * right).
 */
export function storedEventProblem(events: readonly KvEvent[]): string | undefined {
  for (const e of events) {
    if (e.kind !== "stored") continue;
    const h = hasher.hashBlocks(e.tokenIds, e.blockSize, e.parentHash ?? undefined);
    if (h.sequence.length !== e.blockHashes.length) return `${e.tier} stored: ${e.tokenIds.length} tokens for ${e.blockHashes.length} blocks`;
    for (let i = 0; i < h.sequence.length; i++) {
      if (h.sequence[i] !== e.blockHashes[i]) return `${e.tier} stored: block ${i} sequence hash does not follow from its tokens and parent`;
      if (h.local[i] !== e.localHashes[i]) return `${e.tier} stored: block ${i} local hash does not match its tokens`;
    }
  }
  return undefined;
}
