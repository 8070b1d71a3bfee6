// On-disk envelope of one file-backend record: payload + owner + lease expiry, as one JSON
// document. Parsing is strict and returns a problem string (the caller logs it with the filename).
import { KvcrError } from "../lib/errors.ts";
import type { DiscoveryEntry, RecordOwner } from "./store.ts";

/** Format tag, so a future layout change is detected instead of misread. */
export const RECORD_FORMAT = "kvcr-discovery-record/v1";

export interface RecordEnvelope extends DiscoveryEntry {
  format: typeof RECORD_FORMAT;
  leaseTtlMs: number;
}

export type ParsedRecord = { ok: true; record: RecordEnvelope } | { ok: false; problem: string };

/**
 * Serialises an envelope around a payload already serialised once by its owner (`valueJson`), so
 * every renewal republishes exactly the snapshot taken at put/update, even if the caller's object
 * was mutated since.
 */
export function encodeRecord(meta: Omit<RecordEnvelope, "value">, valueJson: string): string {
  const { format, key, owner, revision, leaseTtlMs, leaseExpiresAtMs } = meta;
  const head = JSON.stringify({ format, key, owner, revision, leaseTtlMs, leaseExpiresAtMs });
  return `${head.slice(0, -1)},"value":${valueJson}}`;
}

/** JSON text of a payload, or undefined if it has no JSON form (bigint, function, cycle, undefined). */
export function serialiseValue(value: unknown): string | undefined {
  try {
    const text = JSON.stringify(value);
    return typeof text === "string" ? text : undefined;
  } catch {
    return undefined;
  }
}

/** The payload's JSON text; throws naming the key when it has none (shared by every backend). */
export function requireJson(key: string, value: unknown): string {
  const json = serialiseValue(value);
  if (json === undefined) {
    throw new KvcrError("DISCOVERY_VALUE_INVALID", `discovery record ${key}: value has no JSON form (bigint, function, cycle or undefined); convert it first`);
  }
  return json;
}

/** Parses and checks a record file's text; `expectedKey` is the key its filename stands for. */
export function parseRecord(text: string, expectedKey: string): ParsedRecord {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: `not valid JSON (${(err as Error).message})` };
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return { ok: false, problem: "not a JSON object" };
  const r = doc as Record<string, unknown>;
  if (r.format !== RECORD_FORMAT) return { ok: false, problem: `format is ${JSON.stringify(r.format)}, expected ${JSON.stringify(RECORD_FORMAT)}` };
  if (r.key !== expectedKey) return { ok: false, problem: `key ${JSON.stringify(r.key)} does not match its filename (${JSON.stringify(expectedKey)})` };
  if (!("value" in r)) return { ok: false, problem: "value is missing" };
  const owner = r.owner as Partial<RecordOwner> | undefined;
  if (typeof owner !== "object" || owner === null) return { ok: false, problem: "owner is missing" };
  if (!Number.isSafeInteger(owner.pid) || (owner.pid as number) < 0) return { ok: false, problem: "owner.pid is not a non-negative integer" };
  if (typeof owner.instanceId !== "string" || owner.instanceId.length === 0) return { ok: false, problem: "owner.instanceId is not a non-empty string" };
  if (!Number.isSafeInteger(r.revision) || (r.revision as number) < 1) return { ok: false, problem: "revision is not a positive integer" };
  if (!isPositiveFinite(r.leaseTtlMs)) return { ok: false, problem: "leaseTtlMs is not a positive number" };
  if (!isPositiveFinite(r.leaseExpiresAtMs)) return { ok: false, problem: "leaseExpiresAtMs is not a positive number" };
  return {
    ok: true,
    record: {
      format: RECORD_FORMAT,
      key: expectedKey,
      value: r.value,
      owner: { pid: owner.pid as number, instanceId: owner.instanceId },
      revision: r.revision as number,
      leaseTtlMs: r.leaseTtlMs as number,
      leaseExpiresAtMs: r.leaseExpiresAtMs as number,
    },
  };
}

function isPositiveFinite(x: unknown): x is number {
  return typeof x === "number" && Number.isFinite(x) && x > 0;
}

/** The reader-facing view of an envelope. */
export function toEntry(record: RecordEnvelope): DiscoveryEntry {
  return {
    key: record.key,
    value: record.value,
    owner: record.owner,
    revision: record.revision,
    leaseExpiresAtMs: record.leaseExpiresAtMs,
  };
}
