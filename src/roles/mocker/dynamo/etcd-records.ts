// Dynamo's etcd discovery backend, writer side: the same keys and values as the file store, as
// `{bucket}/{key}` under one lease of this process (Dynamo's TTL, 10 s), kept alive every ~3 s and
// revoked at close, so the records vanish with the process and within the TTL after a kill -9. A
// lease etcd forgot (a restart, a lapse) is granted again and every record put again.
import { b64, EtcdClient, prefixRangeEnd, unb64 } from "../../../discovery/etcd-client.ts";
import type { Logger } from "../../../lib/logger.ts";
import { jsonSafeId } from "./event-publisher.ts";
import type { DynamoRecords } from "./file-records.ts";

export const ETCD_LEASE_TTL_S = 10;

export class DynamoEtcdRecords implements DynamoRecords {
  private leaseId = String(jsonSafeId());
  private readonly records = new Map<string, string>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private closed = false;

  private constructor(
    private readonly client: EtcdClient,
    private readonly logger: Logger,
  ) {}

  static async open(endpoints: readonly string[], logger: Logger): Promise<DynamoEtcdRecords> {
    const r = new DynamoEtcdRecords(new EtcdClient({ endpoints }), logger);
    await r.grant();
    r.timer = setInterval(() => void r.keepAlive(), (ETCD_LEASE_TTL_S * 1000) / 3);
    r.timer.unref?.();
    return r;
  }

  private async grant(): Promise<void> {
    await this.client.call("/v3/lease/grant", { TTL: ETCD_LEASE_TTL_S, ID: this.leaseId });
  }

  async put(bucket: string, key: string, value: unknown): Promise<void> {
    const full = `${bucket}/${key}`;
    const text = JSON.stringify(value);
    this.records.set(full, text);
    await this.client.call("/v3/kv/put", { key: b64(full), value: b64(text), lease: this.leaseId });
  }

  async list(bucket: string, prefix: string): Promise<{ key: string; text: string }[]> {
    const full = `${bucket}/${prefix}`;
    const reply = await this.client.call<{ kvs?: { key: string; value?: string }[] }>("/v3/kv/range", { key: b64(full), range_end: prefixRangeEnd(full) });
    return (reply.kvs ?? []).map((kv) => ({ key: unb64(kv.key).slice(bucket.length + 1), text: unb64(kv.value) })).filter((r) => r.text !== "");
  }

  async remove(bucket: string, key: string): Promise<void> {
    const full = `${bucket}/${key}`;
    this.records.delete(full);
    await this.client.call("/v3/kv/deleterange", { key: b64(full) });
  }

  private async keepAlive(): Promise<void> {
    if (this.closed) return;
    try {
      const reply = await this.client.call<{ result?: { TTL?: string } }>("/v3/lease/keepalive", { ID: this.leaseId });
      if (reply.result?.TTL !== undefined && Number(reply.result.TTL) > 0) return;
      this.logger.warn("etcd forgot this process's discovery lease: granting a new one and putting every record again");
      this.leaseId = String(jsonSafeId());
      await this.grant();
      for (const [key, text] of this.records) await this.client.call("/v3/kv/put", { key: b64(key), value: b64(text), lease: this.leaseId });
    } catch (err) {
      this.logger.warn(`etcd discovery keep-alive failed (retried in ${ETCD_LEASE_TTL_S / 3} s): ${(err as Error).message}`);
    }
  }

  get keys(): readonly string[] {
    return [...this.records.keys()];
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    try {
      await this.client.call("/v3/lease/revoke", { ID: this.leaseId });
    } catch (err) {
      this.logger.warn(`etcd discovery lease not revoked (its records lapse within ${ETCD_LEASE_TTL_S} s): ${(err as Error).message}`);
    }
  }
}
