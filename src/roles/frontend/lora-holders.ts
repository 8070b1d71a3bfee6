// Which workers hold which LoRA adapter, from the adapters their discovery records list (updated as
// they load and unload): a request naming an adapter is routed under its base model, hashed with
// the adapter's seed, and narrowed to the workers holding it (Dynamo's LoRA filter).
import type { WorkerRecord } from "../../protocol/records.ts";

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

  /** Every adapter some worker holds, with its base model. */
  adapters(): [adapter: string, base: string][] {
    const out: [string, string][] = [];
    for (const a of this.holders.keys()) out.push([a, this.baseOf(a)!]);
    return out;
  }
}
