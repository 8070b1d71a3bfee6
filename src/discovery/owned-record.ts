// What every backend's leased record shares: its JSON payload and revision, update() (bumps the
// revision, refused once withdrawn), and one serialised chain of writes, so a renewal or re-put
// can never land after the withdraw and resurrect the record. Backends supply write() and withdraw().
import { KvcrError } from "../lib/errors.ts";
import { requireJson } from "./file-record.ts";
import type { LeasedRecord } from "./store.ts";

export abstract class OwnedRecord implements LeasedRecord {
  protected valueJson: string;
  protected revision = 1;
  protected withdrawn = false;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    readonly key: string,
    value: unknown,
  ) {
    this.valueJson = requireJson(key, value);
  }

  /** True from the moment withdraw() is called (its removal may still be under way). */
  get isWithdrawn(): boolean {
    return this.withdrawn;
  }

  /** A value that is not JSON, or a withdrawn record, rejects. */
  async update(value: unknown): Promise<void> {
    const valueJson = requireJson(this.key, value);
    if (this.withdrawn) throw new KvcrError("DISCOVERY_WITHDRAWN", `discovery record ${this.key} was withdrawn; put it again`);
    return this.enqueue(async () => {
      if (this.withdrawn) return;
      this.valueJson = valueJson;
      this.revision += 1;
      await this.write();
    });
  }

  /** The first write; a failure here surfaces to the caller of put(). */
  abstract start(): Promise<void>;

  abstract withdraw(): Promise<void>;

  async [Symbol.asyncDispose](): Promise<void> {
    await this.withdraw();
  }

  /** Puts the current value and revision where readers find it. */
  protected abstract write(): Promise<void>;

  /** Resolves once every write queued so far has finished (failed or not). */
  protected settled(): Promise<void> {
    return this.chain;
  }

  /** Runs `op` after every write queued before it. */
  protected enqueue(op: () => Promise<void>): Promise<void> {
    const next = this.chain.then(op);
    this.chain = next.catch(() => {}); // one failed write must not block later ones
    return next;
  }
}
