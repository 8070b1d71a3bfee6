// LoRA adapters in one engine's batches (vLLM's scheduler and LRU adapter cache): a batch holds at
// most maxLoras distinct adapters, so a waiting request for another one is skipped (deferred) while
// later ones may go; adapters are kept loaded up to maxCpuLoras, the least recently used idle one
// evicted to load another, each load costing loadMs of step time. Base-model requests are free.
import type { RequestState } from "./request-state.ts";

export interface LoraLimits {
  /** Distinct adapters in one batch (vLLM's --max-loras). */
  maxLoras: number;
  /** Adapters kept loaded (vLLM's --max-cpu-loras; at least maxLoras). */
  maxCpuLoras: number;
  /** Step time one adapter load adds (simulated ms, before the speedup). */
  loadMs: number;
}

export class LoraBatch {
  /** Loaded adapters, least recently used first (Map keeps insertion order; a use re-inserts). */
  private readonly loaded = new Map<string, true>();
  /** Adapters of the running requests in the current admission pass. */
  private readonly active = new Set<string>();
  private pendingLoadMs = 0;
  /** Requests skipped for the adapter budget in the last admission pass (vLLM's "deferred"). */
  deferred = 0;
  loads = 0;
  evictions = 0;

  constructor(private readonly limits: LoraLimits) {}

  /** Starts an admission pass: the adapters the running requests hold. */
  begin(running: readonly RequestState[]): void {
    this.active.clear();
    this.deferred = 0;
    for (let i = 0; i < running.length; i++) {
      const name = running[i]!.loraName;
      if (name !== undefined) this.active.add(name);
    }
  }

  /** Whether `r` may join the batch now: its adapter is in it, or there is room for one more (and a load cell). */
  admits(r: RequestState): boolean {
    const name = r.loraName;
    if (name === undefined || this.active.has(name)) return true;
    if (this.active.size >= this.limits.maxLoras) return false;
    return this.loaded.has(name) || this.loaded.size < this.capacity || this.idleVictim() !== undefined;
  }

  /** `r` joined the batch: its adapter is loaded (evicting the least recently used idle one if full) and used. */
  admitted(r: RequestState): void {
    const name = r.loraName;
    if (name === undefined) return;
    this.active.add(name);
    if (this.loaded.delete(name)) {
      this.loaded.set(name, true);
      return;
    }
    if (this.loaded.size >= this.capacity) {
      const victim = this.idleVictim();
      if (victim !== undefined) {
        this.loaded.delete(victim);
        this.evictions++;
      }
    }
    this.loaded.set(name, true);
    this.loads++;
    this.pendingLoadMs += this.limits.loadMs;
  }

  /** Load time owed by this step's admissions (then zero). */
  takeLoadMs(): number {
    const ms = this.pendingLoadMs;
    this.pendingLoadMs = 0;
    return ms;
  }

  /** Loaded adapters, least recently used first. */
  loadedAdapters(): string[] {
    return [...this.loaded.keys()];
  }

  private get capacity(): number {
    return Math.max(this.limits.maxCpuLoras, this.limits.maxLoras);
  }

  /** The least recently used loaded adapter no running request holds. */
  private idleVictim(): string | undefined {
    for (const name of this.loaded.keys()) if (!this.active.has(name)) return name;
    return undefined;
  }
}

/** Per adapter, how many requests run and wait (vLLM's LoRA request states), and the names in each. */
export function loraRequestCounts(running: readonly RequestState[], waiting: readonly RequestState[]): { running: Map<string, number>; waiting: Map<string, number> } {
  const count = (list: readonly RequestState[]) => {
    const m = new Map<string, number>();
    for (const r of list) if (r.loraName !== undefined) m.set(r.loraName, (m.get(r.loraName) ?? 0) + 1);
    return m;
  };
  return { running: count(running), waiting: count(waiting) };
}
