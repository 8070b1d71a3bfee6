// The records one store holds, one per key (both backends): a put waits for a withdrawal of the
// same key still under way (it would otherwise delete the new record, same owner), refuses a key
// still held, and leaves the key free when the first write fails; close withdraws them all.
import { KvcrError } from "../lib/errors.ts";
import type { OwnedRecord } from "./owned-record.ts";
import type { DiscoveryLogger } from "./store.ts";

export class HeldRecords<R extends OwnedRecord> {
  private readonly byKey = new Map<string, R>();

  /** Resolves once `key` is free; loops, as another put may take the key while we wait. */
  async claim(key: string): Promise<void> {
    for (let held = this.byKey.get(key); held; held = this.byKey.get(key)) {
      if (!held.isWithdrawn) {
        throw new KvcrError("DISCOVERY_DUPLICATE_PUT", `discovery record ${key} is already held by this process; update() or withdraw() it first`);
      }
      await held.withdraw().catch(() => {});
    }
  }

  /** Holds `record` and writes it the first time; a failure frees the key and says `what` failed. */
  async start(record: R, what: string): Promise<R> {
    this.byKey.set(record.key, record);
    try {
      await record.start();
    } catch (err) {
      this.byKey.delete(record.key);
      throw new KvcrError("DISCOVERY_WRITE_FAILED", `${what}: ${(err as Error).message}`, { cause: err });
    }
    return record;
  }

  /** A withdrawn record's key is free again (unless another record holds it by now). */
  release(record: R): void {
    if (this.byKey.get(record.key) === record) this.byKey.delete(record.key);
  }

  /** Withdraws every record held; failures are logged, not thrown (the store is closing). */
  async withdrawAll(logger: DiscoveryLogger): Promise<void> {
    const results = await Promise.allSettled([...this.byKey.values()].map((r) => r.withdraw()));
    for (const f of results) {
      if (f.status === "rejected") logger.warn(`discovery: withdraw on close failed: ${(f.reason as Error)?.message ?? String(f.reason)}`);
    }
  }
}
