// The agent's slots (one per CacheOwner) and the intents behind them, whatever their origin (discovery key,
// static file entry, runtime POST): one slot per owner, at most `maxSlots` of them (an owner beyond
// is rejected and counted once, and admitted when a slot frees up); durable (an owner whose intent
// comes back, e.g. a restarted worker, gets its own slot again without using capacity); two live
// intents for one owner fail the slot (ambiguous) until one goes; no intent → detached, freed
// after the retention time. Timers are injected (`schedule`) so tests drive retention directly.
import type { Logger } from "../../lib/logger.ts";
import type { AgentSlot } from "./slot.ts";
import { sameAttachment, type SourceIntent } from "./sources.ts";

export interface SlotTableDeps {
  maxSlots: number;
  retentionMs: number;
  logger: Logger;
  createSlot(owner: string, intent: SourceIntent): AgentSlot;
  /** Runs `fn` after `ms`; returns a cancel function. */
  schedule(fn: () => void, ms: number): () => void;
  /** A slot leaves the table for good (its counters must live on in the stack-wide totals). */
  freed?(slot: AgentSlot): void;
}

interface Owner {
  readonly intents: Map<string, SourceIntent>;
  slot: AgentSlot | undefined;
  cancelRetention: (() => void) | undefined;
}

export class SlotTable {
  capacityRejected = 0;
  private readonly owners = new Map<string, Owner>();
  /** origin key → owner id. */
  private readonly origins = new Map<string, string>();
  /** Owners rejected for capacity and not admitted since (each counted once, also across restarts). */
  private readonly rejected = new Set<string>();
  private slotCount = 0;
  private closed = false;

  constructor(private readonly deps: SlotTableDeps) {}

  /** Adds or replaces the intent of one origin (a discovery key, "static:3", "runtime:<owner>"). */
  put(origin: string, intent: SourceIntent): void {
    const previous = this.origins.get(origin);
    if (previous !== undefined && previous !== intent.cache_owner_id) this.remove(origin);
    this.origins.set(origin, intent.cache_owner_id);
    let owner = this.owners.get(intent.cache_owner_id);
    if (!owner) {
      owner = { intents: new Map(), slot: undefined, cancelRetention: undefined };
      this.owners.set(intent.cache_owner_id, owner);
    }
    owner.intents.set(origin, intent);
    this.reconcile(intent.cache_owner_id);
  }

  /**
   * Registers a new origin (a runtime source) all or nothing: false, and nothing registered, when
   * its owner has no slot and every slot is taken; when attaching throws, the table is restored (a
   * slot created for it closed and freed, a retained slot detached again) and the error rethrown.
   */
  admit(origin: string, intent: SourceIntent): boolean {
    const id = intent.cache_owner_id;
    const hadSlot = this.owners.get(id)?.slot !== undefined;
    if (!hadSlot && this.slotCount >= this.deps.maxSlots) return false;
    try {
      this.put(origin, intent);
    } catch (err) {
      this.origins.delete(origin);
      const owner = this.owners.get(id);
      owner?.intents.delete(origin);
      if (owner && owner.intents.size === 0) {
        if (!hadSlot && owner.slot) {
          owner.cancelRetention?.();
          owner.slot.close();
          this.deps.freed?.(owner.slot);
          owner.slot = undefined;
          this.slotCount--;
          this.owners.delete(id);
        } else if (owner.slot) {
          try {
            this.reconcile(id);
          } catch {
            // already failing; the original error is the one to report
          }
        } else {
          this.owners.delete(id);
        }
      }
      throw err;
    }
    return true;
  }

  remove(origin: string): boolean {
    const id = this.origins.get(origin);
    if (id === undefined) return false;
    this.origins.delete(origin);
    this.owners.get(id)?.intents.delete(origin);
    this.reconcile(id);
    return true;
  }

  /** Live intents of an owner (any origin). */
  liveIntents(owner: string): number {
    return this.owners.get(owner)?.intents.size ?? 0;
  }

  hasOrigin(origin: string): boolean {
    return this.origins.has(origin);
  }

  slots(): AgentSlot[] {
    const out: AgentSlot[] = [];
    for (const o of this.owners.values()) if (o.slot) out.push(o.slot);
    return out;
  }

  get size(): number {
    return this.slotCount;
  }

  /** Stops every slot's ingest (no events); timers cancelled. */
  close(): void {
    this.closed = true;
    for (const o of this.owners.values()) {
      o.cancelRetention?.();
      o.slot?.close();
    }
  }

  private reconcile(id: string): void {
    if (this.closed) return;
    const owner = this.owners.get(id);
    if (!owner) return;
    const n = owner.intents.size;
    const slot = owner.slot;
    if (!slot) {
      if (n === 0) {
        // A rejected owner stays in `rejected`: its restarted worker is not counted again.
        this.owners.delete(id);
        return;
      }
      if (this.slotCount >= this.deps.maxSlots) {
        if (!this.rejected.has(id)) {
          this.rejected.add(id);
          this.capacityRejected++;
          this.deps.logger.warn(`cache owner ${id} rejected: all ${this.deps.maxSlots} slots are taken (--max-slots); admitted when one frees up`);
        }
        return;
      }
      this.rejected.delete(id);
      const intent = only(owner.intents);
      owner.slot = this.deps.createSlot(id, intent ?? first(owner.intents));
      this.slotCount++;
      if (intent) owner.slot.attach(intent);
      else owner.slot.fail(ambiguity(owner));
      return;
    }
    owner.cancelRetention?.();
    owner.cancelRetention = undefined;
    if (n === 0) {
      slot.detach();
      owner.cancelRetention = this.deps.schedule(() => this.free(id), this.deps.retentionMs);
      return;
    }
    const intent = only(owner.intents);
    if (!intent) {
      slot.fail(ambiguity(owner));
      return;
    }
    if (slot.state === "active" && sameAttachment(slot.intent, intent)) {
      slot.intent = intent; // unchanged attachment; keep the latest record fields
      return;
    }
    if (slot.state === "quarantined" && slot.intent.incarnation === intent.incarnation) return;
    slot.attach(intent);
  }

  private free(id: string): void {
    const owner = this.owners.get(id);
    if (!owner?.slot || owner.intents.size > 0) return;
    owner.slot.close();
    this.deps.freed?.(owner.slot);
    owner.slot = undefined;
    owner.cancelRetention = undefined;
    this.owners.delete(id);
    this.slotCount--;
    this.deps.logger.info(`slot ${id} freed after ${this.deps.retentionMs / 1000} s without an intent`);
    // Admit owners waiting for capacity, oldest first.
    for (const [waiting, o] of this.owners) {
      if (this.slotCount >= this.deps.maxSlots) break;
      if (!o.slot && o.intents.size > 0) this.reconcile(waiting);
    }
  }
}

function only(intents: Map<string, SourceIntent>): SourceIntent | undefined {
  if (intents.size !== 1) return undefined;
  return intents.values().next().value;
}

function first(intents: Map<string, SourceIntent>): SourceIntent {
  return intents.values().next().value!;
}

function ambiguity(owner: Owner): string {
  const workers = [...owner.intents.values()].map((i) => `${i.worker_id} (${i.raw_endpoint})`);
  return `ambiguous: ${owner.intents.size} live intents for this cache owner: ${workers.join(", ")}`;
}
