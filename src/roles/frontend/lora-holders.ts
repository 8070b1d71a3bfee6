// Which workers hold which LoRA adapter, from the adapters their discovery records list (updated as
// they load and unload): a request naming an adapter is routed under its base model, hashed with
// the adapter's seed, and narrowed to the workers holding it (Dynamo's LoRA filter).
import type { WorkerRecord } from "../../protocol/records.ts";

/** What the filter reads of a routed worker. */
export interface LoraCandidate {
  readonly id: string;
  readonly record: { readonly model: string };
  readonly rankIds: readonly number[];
}

export class LoraHolders {
  /** Adapter → (worker id → its base model). */
  private readonly holders = new Map<string, Map<string, string>>();
  /** Worker id → the adapters its record lists. */
  private readonly byWorker = new Map<string, readonly string[]>();

  /** A worker record appeared or changed: its adapters replace what it held before. */
  put(record: WorkerRecord): void {
    this.remove(record.worker_id);
    const adapters = record.lora_adapters ?? [];
    if (adapters.length === 0) return;
    this.byWorker.set(record.worker_id, adapters);
    for (const a of adapters) {
      let m = this.holders.get(a);
      if (m === undefined) this.holders.set(a, (m = new Map()));
      m.set(record.worker_id, record.model);
    }
  }

  remove(workerId: string): void {
    const adapters = this.byWorker.get(workerId);
    if (adapters === undefined) return;
    this.byWorker.delete(workerId);
    for (const a of adapters) {
      const m = this.holders.get(a);
      m?.delete(workerId);
      if (m?.size === 0) this.holders.delete(a);
    }
  }

  get size(): number {
    return this.holders.size;
  }

  /** The base model of an adapter some worker holds (the first holder's); undefined when none does. */
  baseOf(adapter: string): string | undefined {
    const m = this.holders.get(adapter);
    if (m === undefined) return undefined;
    for (const base of m.values()) return base;
    return undefined;
  }

  /** Workers that hold the adapter (empty when none does). */
  holdersOf(adapter: string): Iterable<string> {
    return this.holders.get(adapter)?.keys() ?? [];
  }

  /**
   * Dynamo's LoRA filter as exclusions, the rank ids a request for `adapter` may not go to: while
   * some routable worker (in routing, not already tried) holds it, every other worker of its base
   * model and the tried ones; when none does, only the tried ones (none → all).
   */
  exclusions(adapter: string, workers: Iterable<LoraCandidate>, routable: (workerId: string) => boolean, tried: ReadonlySet<string> | undefined): Set<number> | undefined {
    const holders = new Set<string>();
    for (const id of this.holdersOf(adapter)) if (routable(id) && !tried?.has(id)) holders.add(id);
    const base = this.baseOf(adapter);
    const out = new Set<number>();
    for (const w of workers) {
      if (tried?.has(w.id) || (holders.size > 0 && w.record.model === base && !holders.has(w.id))) for (const s of w.rankIds) out.add(s);
    }
    return out.size === 0 ? undefined : out;
  }

  /** Every adapter some worker holds, with its base model. */
  adapters(): [adapter: string, base: string][] {
    const out: [string, string][] = [];
    for (const a of this.holders.keys()) out.push([a, this.baseOf(a)!]);
    return out;
  }
}
