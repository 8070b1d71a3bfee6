// The agent's attachment records: one per active slot, put when the slot attaches (with the
// outbound cursor of its barrier), updated while it stays active, withdrawn when it stops being
// active or the agent closes. Per CacheOwner, changes apply in order.
import { keys } from "../../discovery/keys.ts";
import type { DiscoveryStore, LeasedRecord } from "../../discovery/store.ts";
import type { Logger } from "../../lib/logger.ts";
import type { AttachmentRecord } from "../../protocol/records.ts";
import type { AgentSlot } from "./slot.ts";

export class AttachmentRecords implements AsyncDisposable {
  private readonly held = new Map<string, LeasedRecord>();
  private readonly chains = new Map<string, Promise<void>>();
  private closed = false;

  constructor(
    private readonly store: DiscoveryStore,
    private readonly namespace: string,
    private readonly agentId: string,
    private readonly logger: Logger,
  ) {}

  follow(slot: AgentSlot): void {
    if (this.closed) return;
    const owner = slot.cacheOwnerId;
    const value: AttachmentRecord | undefined =
      slot.state === "active"
        ? { cache_owner_id: owner, worker_id: slot.intent.worker_id, dp_rank: slot.intent.dp_rank, agent_id: this.agentId, outbound_cursor: slot.attachCursor, incarnation: slot.intent.incarnation }
        : undefined;
    const step = async () => {
      const record = this.held.get(owner);
      if (value === undefined) {
        this.held.delete(owner);
        await record?.withdraw();
      } else if (record) {
        await record.update(value);
      } else if (!this.closed) {
        this.held.set(owner, await this.store.put(keys.attachment(this.namespace, owner), value));
      }
    };
    const next = (this.chains.get(owner) ?? Promise.resolve()).then(step).catch((err: unknown) => this.logger.warn(`attachment record of ${owner}: ${String(err)}`));
    this.chains.set(owner, next);
    void next.then(() => {
      if (this.chains.get(owner) === next) this.chains.delete(owner);
    });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.closed = true;
    await Promise.all(this.chains.values());
    await Promise.all([...this.held.values()].map((r) => r.withdraw().catch(() => {})));
    this.held.clear();
  }
}
