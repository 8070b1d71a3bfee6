// On-disk envelopes of the file backend, one JSON document each: a record (payload + owner + the
// name of its owner's process lease file) and a process lease file (owner + expiry). Parsing is strict and returns a problem string (the caller logs it with
// the filename).
import { KvcrError } from "../lib/errors.ts";
import { isLeaseFileName } from "./file-names.ts";
import type { DiscoveryEntry, RecordOwner } from "./store.ts";

/**
 * Format tag of a record on its owner's process lease file (written once, rewritten on update;
 * v1, a record renewed by rewriting it, is no longer read).
 */
export const LEASED_RECORD_FORMAT = "kvcr-discovery-record/v2";
/** Format tag of a process lease file. */
export const LEASE_FORMAT = "kvcr-discovery-lease/v1";

export interface RecordEnvelope extends DiscoveryEntry {
  format: typeof LEASED_RECORD_FORMAT;
  leaseTtlMs: number;
  /**
   * The owner's lease file, whose expiry is the record's: `leaseExpiresAtMs` is 0 as parsed and
   * filled in from the lease file by the reader (file-watch.ts).
   */
  lease: string;
}

/** A process lease file: every record naming it lives until `leaseExpiresAtMs`. */
export interface LeaseEnvelope {
  format: typeof LEASE_FORMAT;
  owner: RecordOwner;
  leaseTtlMs: number;
  leaseExpiresAtMs: number;
}

export type ParsedRecord = { ok: true; record: RecordEnvelope } | { ok: false; problem: string };

/**
 * Serialises an envelope around a payload already serialised once by its owner (`valueJson`), so
 * every write republishes exactly the snapshot taken at put/update, even if the caller's object
 * was mutated since. The expiry is not written: it lives in the lease file.
 */
export function encodeRecord(meta: Omit<RecordEnvelope, "value">, valueJson: string): string {
  const { format, key, owner, revision, leaseTtlMs, lease } = meta;
  const head = JSON.stringify({ format, key, owner, revision, leaseTtlMs, lease });
  return `${head.slice(0, -1)},"value":${valueJson}}`;
}

export function encodeLease(lease: Omit<LeaseEnvelope, "format">): string {
  return JSON.stringify({ format: LEASE_FORMAT, owner: lease.owner, leaseTtlMs: lease.leaseTtlMs, leaseExpiresAtMs: lease.leaseExpiresAtMs });
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

/** A file's text as a JSON object, or the problem with it. */
function jsonObject(text: string): Record<string, unknown> | string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return `not valid JSON (${(err as Error).message})`;
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return "not a JSON object";
  return doc as Record<string, unknown>;
}

/** Parses and checks a record file's text; `expectedKey` is the key its filename stands for. */
export function parseRecord(text: string, expectedKey: string): ParsedRecord {
  const r = jsonObject(text);
  if (typeof r === "string") return { ok: false, problem: r };
  if (r.format !== LEASED_RECORD_FORMAT) return { ok: false, problem: `format is ${JSON.stringify(r.format)}, expected ${JSON.stringify(LEASED_RECORD_FORMAT)}` };
  if (r.key !== expectedKey) return { ok: false, problem: `key ${JSON.stringify(r.key)} does not match its filename (${JSON.stringify(expectedKey)})` };
  if (!("value" in r)) return { ok: false, problem: "value is missing" };
  const owner = checkOwner(r.owner);
  if (typeof owner === "string") return { ok: false, problem: owner };
  if (!Number.isSafeInteger(r.revision) || (r.revision as number) < 1) return { ok: false, problem: "revision is not a positive integer" };
  if (!isPositiveFinite(r.leaseTtlMs)) return { ok: false, problem: "leaseTtlMs is not a positive number" };
  const base = { key: expectedKey, value: r.value, owner, revision: r.revision as number, leaseTtlMs: r.leaseTtlMs as number };
  // Only a lease file name (no path): a record cannot make a reader open anything else.
  if (typeof r.lease !== "string" || !isLeaseFileName(r.lease)) return { ok: false, problem: `lease ${JSON.stringify(r.lease)} is not a lease file name` };
  return { ok: true, record: { format: LEASED_RECORD_FORMAT, ...base, lease: r.lease, leaseExpiresAtMs: 0 } };
}

export type ParsedLease = { ok: true; lease: LeaseEnvelope } | { ok: false; problem: string };

/** Parses and checks a process lease file's text. */
export function parseLease(text: string): ParsedLease {
  const r = jsonObject(text);
  if (typeof r === "string") return { ok: false, problem: r };
  if (r.format !== LEASE_FORMAT) return { ok: false, problem: `format is ${JSON.stringify(r.format)}, expected ${JSON.stringify(LEASE_FORMAT)}` };
  const owner = checkOwner(r.owner);
  if (typeof owner === "string") return { ok: false, problem: owner };
  if (!isPositiveFinite(r.leaseTtlMs)) return { ok: false, problem: "leaseTtlMs is not a positive number" };
  if (!isPositiveFinite(r.leaseExpiresAtMs)) return { ok: false, problem: "leaseExpiresAtMs is not a positive number" };
  return { ok: true, lease: { format: LEASE_FORMAT, owner, leaseTtlMs: r.leaseTtlMs as number, leaseExpiresAtMs: r.leaseExpiresAtMs as number } };
}

/** The owner, or the problem with it. */
function checkOwner(value: unknown): RecordOwner | string {
  const owner = value as Partial<RecordOwner> | undefined;
  if (typeof owner !== "object" || owner === null) return "owner is missing";
  if (!Number.isSafeInteger(owner.pid) || (owner.pid as number) < 0) return "owner.pid is not a non-negative integer";
  if (typeof owner.instanceId !== "string" || owner.instanceId.length === 0) return "owner.instanceId is not a non-empty string";
  return { pid: owner.pid as number, instanceId: owner.instanceId };
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
