// Key ↔ filename mapping for the file backend: one flat directory, one `<escaped key>.json` per
// record. Every byte outside [A-Za-z0-9_.-] (and a leading '.') is %XX-escaped, so a name never
// holds '/', never is '.'/'..', never collides with our dot-prefixed temp and lease files; decoding
// is strict. Process lease files are `.lease-<owner instance id>-<ttl ms>.json`.
import { KvcrError } from "../lib/errors.ts";
import { validateKey } from "./keys.ts";

export const RECORD_SUFFIX = ".json";
/** Temp files (atomic writes) and anything else dot-prefixed are never records. */
export const TEMP_PREFIX = ".tmp-";
/** Process lease files (one per process and TTL); dot-prefixed, so never taken for records. */
export const LEASE_PREFIX = ".lease-";
const LEASE_NAME = /^\.lease-[A-Za-z0-9_-]{1,100}\.json$/;
/** Most filesystems cap a name at 255 bytes; keep a margin. */
export const MAX_FILE_NAME_BYTES = 250;

const SAFE = /[A-Za-z0-9_.-]/;
const encoder = new TextEncoder();

/** Escaped filename for a key; throws KvcrError if the key is invalid or too long for a filename. */
export function keyToFileName(key: string): string {
  validateKey(key);
  let out = "";
  let index = 0;
  for (const ch of key) {
    if (SAFE.test(ch) && !(index === 0 && ch === ".")) out += ch;
    else for (const byte of encoder.encode(ch)) out += `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
    index += ch.length;
  }
  const name = out + RECORD_SUFFIX;
  if (name.length > MAX_FILE_NAME_BYTES) {
    throw new KvcrError(
      "DISCOVERY_KEY_TOO_LONG",
      `discovery key ${JSON.stringify(key)} encodes to a ${name.length}-byte filename; the file backend allows ${MAX_FILE_NAME_BYTES} (shorten the namespace or ids)`,
    );
  }
  return name;
}

/**
 * The key a record filename stands for, or undefined if the name is not one we would write
 * (temp files, foreign files, non-canonical escapes). Canonical-only decoding keeps the map 1:1.
 */
export function fileNameToKey(name: string): string | undefined {
  if (!name.endsWith(RECORD_SUFFIX) || name.startsWith(".")) return undefined;
  const body = name.slice(0, -RECORD_SUFFIX.length);
  if (!/^(?:[A-Za-z0-9_.-]|%[0-9A-F]{2})+$/.test(body)) return undefined;
  let key: string;
  try {
    key = decodeURIComponent(body);
  } catch {
    return undefined; // invalid UTF-8 escape sequence
  }
  try {
    return keyToFileName(key) === name ? key : undefined;
  } catch {
    return undefined; // decodes to an invalid key
  }
}

/** Whether a directory entry looks like one of our record files (cheap pre-filter). */
export function isRecordFileName(name: string): boolean {
  return name.endsWith(RECORD_SUFFIX) && !name.startsWith(".");
}

/** The lease file of one store's records with one TTL. */
export function leaseFileName(instanceId: string, leaseTtlMs: number): string {
  const name = `${LEASE_PREFIX}${instanceId}-${String(leaseTtlMs).replace(/[^0-9]/g, "_")}${RECORD_SUFFIX}`;
  if (!isLeaseFileName(name)) throw new KvcrError("DISCOVERY_LEASE_INVALID", `discovery lease name ${JSON.stringify(name)} is invalid (owner id ${JSON.stringify(instanceId)})`);
  return name;
}

/** Whether a directory entry (or a record's `lease` field) is a process lease file name. */
export function isLeaseFileName(name: string): boolean {
  return LEASE_NAME.test(name);
}
