// The agent's counters summed over its slots, plus those of slots already freed: a `_total`
// series must never go down when a slot leaves (Prometheus would read the drop as a reset).
import type { AgentSlot } from "./slot.ts";

/** Every per-slot counter the agent exports, by name. */
export function slotCounters(s: AgentSlot) {
  const q = s.sequencerCounters;
  const r = s.residency.counters;
  return {
    rawBatches: s.counters.rawBatches,
    gaps: q.gaps,
    recovered: q.recovered,
    dropped: q.dropped,
    replayOutOfRange: q.replayOutOfRange,
    duplicates: q.duplicates,
    restarts: q.restarts,
    dumpsApplied: q.dumpsApplied,
    dumpsFailed: q.dumpsFailed,
    oversizePayloads: s.counters.oversizePayloads,
    orphanStores: r.orphanStores,
    malformedEvents: r.malformedEvents,
    unknownRemovals: r.unknownRemovals,
    decodeErrors: s.counters.decodeErrors,
    faults: s.counters.faults,
    blockOps: r.blockOps,
  };
}
export type SlotCounterTotals = ReturnType<typeof slotCounters>;

export class SlotTotals {
  /** Totals of the slots freed so far. */
  private readonly freed: SlotCounterTotals = zero();

  /** A slot leaves for good: its counters stay in the totals. */
  retire(slot: AgentSlot): void {
    add(this.freed, slotCounters(slot));
  }

  /** Live slots' counters plus the freed ones'. */
  sum(slots: readonly AgentSlot[]): SlotCounterTotals {
    const out = { ...this.freed };
    for (const s of slots) add(out, slotCounters(s));
    return out;
  }
}

function zero(): SlotCounterTotals {
  return { rawBatches: 0, gaps: 0, recovered: 0, dropped: 0, replayOutOfRange: 0, duplicates: 0, restarts: 0, dumpsApplied: 0, dumpsFailed: 0, oversizePayloads: 0, orphanStores: 0, malformedEvents: 0, unknownRemovals: 0, decodeErrors: 0, faults: 0, blockOps: 0 };
}

function add(into: SlotCounterTotals, c: SlotCounterTotals): void {
  for (const k of Object.keys(into) as (keyof SlotCounterTotals)[]) into[k] += c[k];
}
