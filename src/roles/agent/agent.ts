// The state agent without its process edge: slots, ingest, the outbound stream and the
// views HTTP serves (/health, /v1/slots, /v1/snapshot, /metrics, runtime sources). start.ts adds
// the HTTP server, discovery (intents in, host and attachment records out) and the static file.
import type { BlockHasher } from "../../core/kv/block-hash.ts";
import type { Logger } from "../../lib/logger.ts";
import type { AgentSnapshot } from "../../protocol/agent-snapshot.ts";
import type { MetricFamily } from "../../protocol/prometheus.ts";
import { LagHistogram } from "./lag-histogram.ts";
import type { RouterEventOutbound } from "./outbound.ts";
import { AgentSlot, SLOT_STATES, type SlotState } from "./slot.ts";
import { SlotTable } from "./slot-table.ts";
import { SlotTotals } from "./slot-totals.ts";
import { checkSourceIntent, type SourceIntent } from "./sources.ts";

export interface AgentOptions {
  maxSlots: number;
  retentionMs: number;
  replayTimeoutMs: number;
  /** --max-event-payload-bytes: the one payload limit of every slot's live, replay and dump paths. */
  maxPayloadBytes?: number;
  logger: Logger;
  hasher: BlockHasher;
  outbound: RouterEventOutbound;
  /** A slot changed state or re-attached (attachment records follow it). */
  slotChanged?: (slot: AgentSlot) => void;
  schedule?: (fn: () => void, ms: number) => () => void;
  nowMs?: () => number;
}

export interface HealthBody {
  healthy: boolean;
  /** "degraded" while a slot's residency may miss blocks (a loss a state dump has not made good yet). */
  status: "healthy" | "degraded" | "unhealthy";
  /** `degraded` counts active slots that are degraded (not a state of its own). */
  slots: { total: number; active: number; detached: number; failed: number; quarantined: number; degraded: number };
  capacity_rejected_total: number;
  raw_gaps_total: number;
  raw_batches_recovered_total: number;
  raw_dropped_batches_total: number;
  raw_replay_out_of_range_total: number;
  state_dumps_applied_total: number;
  oversize_payloads_total: number;
  outbound_cursor: number;
}

export interface SlotView {
  cache_owner_id: string;
  worker_id: string;
  dp_rank: number;
  state: SlotState;
  raw_endpoint: string;
  raw_topic: string;
  replay_endpoint?: string;
  /** Where the publisher answers a full state dump; absent for publishers without one (vLLM). */
  state_dump_url?: string;
  raw_cursor: number;
  /** True while the slot back-fills from its replay endpoint (on attach, or repairing a gap). */
  raw_replaying: boolean;
  /** The raw SUB has a live connection to the raw endpoint now. */
  connected: boolean;
  /** Milliseconds since the slot last applied a batch; null before the first. */
  last_batch_age_ms: number | null;
  incarnation: number;
  fault?: string;
  /** Its residency may miss blocks (batches lost, no state dump applied since); `degraded_reason` says why. */
  degraded: boolean;
  degraded_reason?: string;
  blocks: { device: number; host: number; disk: number };
  raw_gaps: number;
  raw_batches_recovered: number;
  raw_dropped_batches: number;
  raw_replay_out_of_range: number;
  state_dumps_applied: number;
  state_dumps_failed: number;
  oversize_payloads: number;
  decode_errors: number;
  orphan_stores: number;
  malformed_events: number;
}

export type SourceOutcome = { status: 201 | 400 | 404 | 409 | 500; message: string };

const runtimeOrigin = (owner: string) => `runtime:${owner}`;

export class KvStateAgent {
  readonly table: SlotTable;
  readonly lag = new LagHistogram();
  /** Slot state changes by the state entered (attach included), for /metrics. */
  readonly transitions: Record<SlotState, number> = { active: 0, detached: 0, failed: 0, quarantined: 0 };
  private readonly totals = new SlotTotals();
  private readonly nowMs: () => number;

  constructor(private readonly opts: AgentOptions) {
    this.nowMs = opts.nowMs ?? (() => Date.now());
    const schedule =
      opts.schedule ??
      ((fn: () => void, ms: number) => {
        const t = setTimeout(fn, ms);
        return () => clearTimeout(t);
      });
    this.table = new SlotTable({
      maxSlots: opts.maxSlots,
      retentionMs: opts.retentionMs,
      logger: opts.logger,
      schedule,
      freed: (slot) => this.totals.retire(slot),
      createSlot: (owner, intent) =>
        new AgentSlot(owner, intent, {
          logger: opts.logger,
          hasher: opts.hasher,
          emit: (e) => opts.outbound.push(e),
          flush: () => opts.outbound.flush(),
          nowSeconds: () => this.nowMs() / 1000,
          nowMs: this.nowMs,
          observeLagSeconds: (s) => this.lag.observe(s),
          replayTimeoutMs: opts.replayTimeoutMs,
          ...(opts.maxPayloadBytes !== undefined ? { maxPayloadBytes: opts.maxPayloadBytes } : {}),
          changed: (slot) => this.slotChanged(slot),
        }),
    });
  }

  private slotChanged(slot: AgentSlot): void {
    this.transitions[slot.state]++;
    const detail = slot.fault ? `: ${slot.fault}` : slot.state === "active" ? ` to ${slot.intent.raw_endpoint} (worker ${slot.intent.worker_id} rank ${slot.intent.dp_rank}, incarnation ${slot.intent.incarnation})` : "";
    this.opts.logger[slot.state === "active" ? "info" : "warn"](`slot ${slot.cacheOwnerId} ${slot.state === "active" ? "attached" : slot.state}${detail}`);
    this.opts.slotChanged?.(slot);
  }

  putSource(origin: string, intent: SourceIntent): void {
    this.table.put(origin, intent);
  }

  removeSource(origin: string): boolean {
    return this.table.remove(origin);
  }

  /** POST /v1/sources: an intent-shaped body (any raw topic). */
  addRuntimeSource(body: unknown): SourceOutcome {
    const r = checkSourceIntent(body);
    if (!r.ok) return { status: 400, message: `bad source: ${r.problem}` };
    const owner = r.value.cache_owner_id;
    if (this.table.liveIntents(owner) > 0) return { status: 409, message: `cache owner ${owner} already has a live source; DELETE /v1/sources/${encodeURIComponent(owner)} first (runtime sources only)` };
    // All or nothing: refused for capacity, or rolled back when attaching throws.
    let admitted: boolean;
    try {
      admitted = this.table.admit(runtimeOrigin(owner), r.value);
    } catch (err) {
      this.opts.logger.error(`POST /v1/sources: adding cache owner ${owner} failed (not registered): ${(err as Error).message}`);
      return { status: 500, message: `internal error adding source ${owner} (not registered): ${(err as Error).message}` };
    }
    if (!admitted) {
      return { status: 409, message: `no capacity: all ${this.opts.maxSlots} slots (--max-slots ${this.opts.maxSlots}) are taken; cache owner ${owner} not added` };
    }
    return { status: 201, message: `source ${owner} added` };
  }

  deleteRuntimeSource(owner: string): SourceOutcome {
    if (!this.table.remove(runtimeOrigin(owner))) return { status: 404, message: `no runtime source for cache owner ${owner}` };
    return { status: 201, message: `source ${owner} removed` };
  }

  health(): HealthBody {
    const counts = { total: 0, active: 0, detached: 0, failed: 0, quarantined: 0, degraded: 0 };
    const slots = this.table.slots();
    for (const s of slots) {
      counts.total++;
      counts[s.state]++;
      if (s.degraded) counts.degraded++;
    }
    const t = this.totals.sum(slots);
    // Unhealthy only for what an operator must act on: a failed (ambiguous) or quarantined slot.
    // Degraded (a slot rebuilding, or left partial by a publisher without a dump) is still 200.
    const healthy = counts.failed === 0 && counts.quarantined === 0;
    return {
      healthy,
      status: !healthy ? "unhealthy" : counts.degraded > 0 ? "degraded" : "healthy",
      slots: counts,
      capacity_rejected_total: this.table.capacityRejected,
      raw_gaps_total: t.gaps,
      raw_batches_recovered_total: t.recovered,
      raw_dropped_batches_total: t.dropped,
      raw_replay_out_of_range_total: t.replayOutOfRange,
      state_dumps_applied_total: t.dumpsApplied,
      oversize_payloads_total: t.oversizePayloads,
      outbound_cursor: this.opts.outbound.cursor,
    };
  }

  slotViews(): SlotView[] {
    const now = this.nowMs();
    return this.table
      .slots()
      .sort((a, b) => (a.cacheOwnerId < b.cacheOwnerId ? -1 : 1))
      .map((s) => {
        const c = s.sequencerCounters;
        const r = s.residency;
        const view: SlotView = {
          cache_owner_id: s.cacheOwnerId,
          worker_id: s.intent.worker_id,
          dp_rank: s.intent.dp_rank,
          state: s.state,
          raw_endpoint: s.intent.raw_endpoint,
          raw_topic: s.intent.raw_topic,
          raw_cursor: s.rawCursor,
          raw_replaying: s.replaying,
          connected: s.connected,
          last_batch_age_ms: s.lastBatchMs === undefined ? null : Math.max(0, now - s.lastBatchMs),
          incarnation: s.intent.incarnation,
          degraded: s.degraded,
          blocks: { device: r.presentBlocks[0]!, host: r.presentBlocks[1]!, disk: r.presentBlocks[2]! },
          raw_gaps: c.gaps,
          raw_batches_recovered: c.recovered,
          raw_dropped_batches: c.dropped,
          raw_replay_out_of_range: c.replayOutOfRange,
          state_dumps_applied: c.dumpsApplied,
          state_dumps_failed: c.dumpsFailed,
          oversize_payloads: s.counters.oversizePayloads,
          decode_errors: s.counters.decodeErrors,
          orphan_stores: r.counters.orphanStores,
          malformed_events: r.counters.malformedEvents,
        };
        if (s.intent.replay_endpoint !== undefined) view.replay_endpoint = s.intent.replay_endpoint;
        if (s.fault !== undefined) view.fault = s.fault;
        if (s.intent.state_dump_url !== undefined) view.state_dump_url = s.intent.state_dump_url;
        const why = s.degradedReason;
        if (why !== undefined) view.degraded_reason = why;
        return view;
      });
  }

  /** Every active slot's residency, stamped with the cursor that reflects it (queued events sent first). */
  snapshot(): AgentSnapshot {
    const cursor = this.opts.outbound.flush();
    const sources = this.table
      .slots()
      .filter((s) => s.state === "active")
      .sort((a, b) => (a.cacheOwnerId < b.cacheOwnerId ? -1 : 1))
      .map((s) => ({ cache_owner_id: s.cacheOwnerId, worker_id: s.intent.worker_id, dp_rank: s.intent.dp_rank, tiers: s.residency.snapshot() }));
    return { cursor, sources };
  }

  metrics(): MetricFamily[] {
    const slots = this.table.slots();
    // Freed slots' counts included: a total never goes down when a slot leaves.
    const t = this.totals.sum(slots);
    const counter = (name: string, help: string, value: number): MetricFamily => ({ name, help, type: "counter", samples: [{ value }] });
    const byState = SLOT_STATES.map((state) => ({ labels: { state }, value: slots.filter((s) => s.state === state).length }));
    const out = this.opts.outbound;
    return [
      { name: "kvcr_agent_slots", help: "Slots by state", type: "gauge", samples: byState },
      { name: "kvcr_agent_slot_transitions_total", help: "Slot state changes by the state entered (active = attach or re-attach)", type: "counter", samples: SLOT_STATES.map((state) => ({ labels: { state }, value: this.transitions[state] })) },
      { name: "kvcr_agent_max_slots", help: "Slot capacity (--max-slots)", type: "gauge", samples: [{ value: this.opts.maxSlots }] },
      counter("kvcr_agent_capacity_rejected_total", "Cache owners rejected because every slot was taken", this.table.capacityRejected),
      { name: "kvcr_agent_degraded_slots", help: "Active slots whose residency may miss blocks (lost batches not yet made good by a state dump)", type: "gauge", samples: [{ value: slots.filter((s) => s.degraded).length }] },
      counter("kvcr_agent_raw_batches_total", "Raw KV-event batches received and applied or rejected", t.rawBatches),
      counter("kvcr_agent_raw_gaps_total", "Raw cursor gaps seen on live streams", t.gaps),
      counter("kvcr_agent_raw_batches_recovered_total", "Raw batches recovered from replay endpoints", t.recovered),
      counter("kvcr_agent_raw_dropped_batches_total", "Raw batches lost for good (slot resynchronised)", t.dropped),
      counter("kvcr_agent_raw_replay_out_of_range_total", "Replay replies outside the requested range (below it, or far past the live stream), dropped", t.replayOutOfRange),
      counter("kvcr_agent_raw_duplicate_batches_total", "Raw batches seen twice (replay/live overlap), dropped", t.duplicates),
      counter("kvcr_agent_publisher_restarts_total", "Raw seq went backwards: publisher restarted, slot cleared", t.restarts),
      counter("kvcr_agent_state_dumps_total", "Publisher state dumps applied (a degraded slot rebuilt whole)", t.dumpsApplied),
      counter("kvcr_agent_state_dump_failures_total", "State dumps asked for that could not be fetched or used (the slot stays degraded and retries)", t.dumpsFailed),
      counter("kvcr_agent_oversize_payloads_total", "Raw payloads over --max-event-payload-bytes (live, replay or dump), dropped; the slot resyncs", t.oversizePayloads),
      counter("kvcr_agent_orphan_stores_total", "Stored events whose parent the slot did not know (dropped)", t.orphanStores),
      counter("kvcr_agent_malformed_events_total", "Events with a bad token count or unknown medium (dropped)", t.malformedEvents),
      counter("kvcr_agent_unknown_removals_total", "Removals of blocks the slot did not hold (ignored)", t.unknownRemovals),
      counter("kvcr_agent_decode_errors_total", "Undecodable raw frames or payloads", t.decodeErrors),
      counter("kvcr_agent_source_faults_total", "Source faults that quarantined a slot", t.faults),
      counter("kvcr_agent_block_ops_total", "Block stores and removals applied", t.blockOps),
      { name: "kvcr_agent_outbound_cursor", help: "Cursor of the last router-event batch published", type: "gauge", samples: [{ value: out.cursor }] },
      counter("kvcr_agent_router_events_total", "Router events published", out.eventsPublished),
      counter("kvcr_agent_router_batches_dropped_total", "Router-event batch copies dropped for subscribers at their send high-water mark", out.droppedByHwm()),
      { name: "kvcr_agent_router_event_subscribers", help: "Subscribers of the router-event stream", type: "gauge", samples: [{ value: out.subscriberCount() }] },
      counter("kvcr_agent_router_event_subscribers_dropped_total", "Subscribers dropped for passing a subscription bound (count, prefix length, total bytes)", out.subscribersOverLimits()),
      this.lag.family("kvcr_agent_ingest_lag_seconds", "Live raw batch ingest lag: agent wall clock minus the batch ts"),
    ];
  }

  close(): void {
    this.table.close();
  }
}
