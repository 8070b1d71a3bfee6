// The value of one record in etcd: payload + owner + the owner's revision, as one JSON document
// (key `{root}/{discovery key}`, base64 on the wire). A withdrawal first rewrites the value with
// `withdrawn: true` and then deletes it, so a watcher's delete event (with prev_kv) tells
// "removed" from "expired" (a lapsed lease deletes a value without the mark).
import { b64, unb64 } from "./etcd-client.ts";
import type { EtcdKv } from "./etcd-gateway.ts";
import type { DiscoveryEntry, RecordOwner } from "./store.ts";

export const ETCD_RECORD_FORMAT = "kvcr-discovery-etcd/v1";
/** Root segment in etcd (keys are `{root}/{namespace}/{kind}/{id…}`). */
export const ETCD_ROOT = "kvcr";

export interface EtcdEnvelope {
  key: string;
  value: unknown;
  owner: RecordOwner;
  revision: number;
  leaseTtlMs: number;
  withdrawn: boolean;
  /** etcd's lease id (decimal string) the value is attached to. */
  lease: string;
  /** etcd's revision of this value's last change (0 when the kv does not say). */
  modRevision: bigint;
}

export type DecodedKv = { ok: true; key: string; record: EtcdEnvelope } | { ok: false; key: string; problem: string };

export function etcdKey(root: string, key: string): string {
  return `${root}/${key}`;
}

/** Serialises around the owner's once-serialised payload, so renewals republish that snapshot. */
export function encodeEnvelope(meta: { owner: RecordOwner; revision: number; leaseTtlMs: number; withdrawn?: boolean }, valueJson: string): string {
  const head = JSON.stringify({ format: ETCD_RECORD_FORMAT, owner: meta.owner, revision: meta.revision, leaseTtlMs: meta.leaseTtlMs, ...(meta.withdrawn ? { withdrawn: true } : {}) });
  return b64(`${head.slice(0, -1)},"value":${valueJson}}`);
}

/** Decodes and checks one kv under `root/`; a foreign or malformed value comes back as a problem. */
export function decodeKv(root: string, kv: EtcdKv): DecodedKv {
  const fullKey = unb64(kv.key);
  const key = fullKey.startsWith(`${root}/`) ? fullKey.slice(root.length + 1) : fullKey;
  let doc: unknown;
  try {
    doc = JSON.parse(unb64(kv.value));
  } catch (err) {
    return { ok: false, key, problem: `not valid JSON (${(err as Error).message})` };
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return { ok: false, key, problem: "not a JSON object" };
  const r = doc as Record<string, unknown>;
  if (r.format !== ETCD_RECORD_FORMAT) return { ok: false, key, problem: `format is ${JSON.stringify(r.format)}, expected ${JSON.stringify(ETCD_RECORD_FORMAT)}` };
  if (!("value" in r)) return { ok: false, key, problem: "value is missing" };
  const owner = r.owner as Partial<RecordOwner> | undefined;
  if (typeof owner !== "object" || owner === null || !Number.isSafeInteger(owner.pid) || typeof owner.instanceId !== "string" || owner.instanceId.length === 0) {
    return { ok: false, key, problem: "owner is not {pid, instanceId}" };
  }
  if (!Number.isSafeInteger(r.revision) || (r.revision as number) < 1) return { ok: false, key, problem: "revision is not a positive integer" };
  const leaseTtlMs = typeof r.leaseTtlMs === "number" && r.leaseTtlMs > 0 ? r.leaseTtlMs : 0;
  if (leaseTtlMs === 0) return { ok: false, key, problem: "leaseTtlMs is not a positive number" };
  return {
    ok: true,
    key,
    record: {
      key,
      value: r.value,
      owner: { pid: owner.pid as number, instanceId: owner.instanceId, ...(typeof owner.host === "string" ? { host: owner.host } : {}) },
      revision: r.revision as number,
      leaseTtlMs,
      withdrawn: r.withdrawn === true,
      lease: kv.lease ?? "0",
      modRevision: revisionOf(kv.mod_revision),
    },
  };
}

/** An int64 revision as the gateway writes it (a decimal string); 0 when absent or not one. */
export function revisionOf(text: string | undefined): bigint {
  return text !== undefined && /^\d{1,19}$/.test(text) ? BigInt(text) : 0n;
}

/** Identifies one published version of a record (renewals and re-puts do not change it). */
export function versionOf(record: Pick<EtcdEnvelope, "owner" | "revision">): string {
  return `${record.owner.instanceId}#${record.revision}`;
}

export function toEntry(record: EtcdEnvelope, leaseExpiresAtMs: number): DiscoveryEntry {
  return { key: record.key, value: record.value, owner: record.owner, revision: record.revision, leaseExpiresAtMs };
}
