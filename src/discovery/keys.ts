// Discovery key layout: `{namespace}/{kind}/{segment}[/{segment}…]`, one helper per record kind.
// Segments are escaped (`%` → %25, `/` → %2F) so ids that contain `/` (CacheOwner ids) stay one
// segment; keys stay readable, and a backend may add its own root prefix (e.g. in etcd).
import { ConfigError, KvcrError } from "../lib/errors.ts";
import { namespaceProblem } from "../protocol/namespace.ts";


/** Record kinds and the key segment each lives under. */
export const RECORD_KINDS = {
  worker: "workers",
  agent: "agents",
  intent: "intents",
  attachment: "attachments",
} as const;
export type RecordKind = keyof typeof RECORD_KINDS;

/** Longest key accepted (the file backend has a tighter filename budget, checked at put). */
export const MAX_KEY_LENGTH = 1024;
// Control characters have no business in keys and would make logs and filenames confusing.
const CONTROL_RE = /[\u0000-\u001f\u007f]/;

/** Throws ConfigError unless `ns` is 1–64 chars of [A-Za-z0-9._-], starting alphanumeric. */
export function validateNamespace(ns: string): string {
  const problem = namespaceProblem(ns);
  if (problem) throw new ConfigError([`namespace: ${JSON.stringify(ns)} is invalid; ${problem}`]);
  return ns;
}

export function escapeSegment(segment: string): string {
  if (segment.length === 0) throw new KvcrError("DISCOVERY_KEY_INVALID", "discovery key segment is empty");
  return segment.replaceAll("%", "%25").replaceAll("/", "%2F");
}

export function unescapeSegment(segment: string): string {
  return segment.replace(/%(25|2F)/gi, (m) => (m.toUpperCase() === "%25" ? "%" : "/"));
}

/** Throws KvcrError naming the key unless it is a well-formed discovery key. */
export function validateKey(key: string): string {
  const problem = keyProblem(key);
  if (problem) throw new KvcrError("DISCOVERY_KEY_INVALID", `discovery key ${JSON.stringify(key)} is invalid: ${problem}`);
  return key;
}

function keyProblem(key: string): string | undefined {
  if (key.length === 0) return "empty";
  if (key.length > MAX_KEY_LENGTH) return `longer than ${MAX_KEY_LENGTH} characters`;
  if (CONTROL_RE.test(key)) return "contains a control character";
  const segments = key.split("/");
  if (segments.some((s) => s.length === 0)) return "has an empty segment (leading, trailing or doubled '/')";
  if (segments.length < 2) return "needs at least a namespace and one more segment";
  if (namespaceProblem(segments[0] as string)) return "does not start with a valid namespace";
  return undefined;
}

/** Throws unless `prefix` is usable with list/watch (no control characters; may be any string). */
export function validatePrefix(prefix: string): string {
  if (CONTROL_RE.test(prefix) || prefix.length > MAX_KEY_LENGTH) {
    throw new KvcrError("DISCOVERY_KEY_INVALID", `discovery prefix ${JSON.stringify(prefix)} is invalid: control character or too long`);
  }
  return prefix;
}

function build(ns: string, kind: RecordKind, ids: readonly string[]): string {
  return [validateNamespace(ns), RECORD_KINDS[kind], ...ids.map(escapeSegment)].join("/");
}

/** Key builders; each `…Prefix` ends in `/` so it never matches a sibling (`ns1` vs `ns10`). */
export const keys = {
  /** Everything in a namespace. */
  namespacePrefix: (ns: string) => `${validateNamespace(ns)}/`,
  kindPrefix: (ns: string, kind: RecordKind) => `${validateNamespace(ns)}/${RECORD_KINDS[kind]}/`,
  /** A worker instance record (one per worker; dp ranks live in its payload). */
  worker: (ns: string, workerId: string) => build(ns, "worker", [workerId]),
  /** A state-agent host record. */
  agent: (ns: string, agentId: string) => build(ns, "agent", [agentId]),
  /**
   * An attachment intent. Keyed by CacheOwner and then the publishing instance, so two live
   * intents for one owner are two records (the agent fails that slot as ambiguous until one goes).
   */
  intent: (ns: string, cacheOwner: string, publisherId: string) => build(ns, "intent", [cacheOwner, publisherId]),
  /** All intents for one CacheOwner. */
  intentsFor: (ns: string, cacheOwner: string) => `${build(ns, "intent", [cacheOwner])}/`,
  /** The agent's attachment record for one of its slots. */
  attachment: (ns: string, cacheOwner: string) => build(ns, "attachment", [cacheOwner]),
} as const;

export interface ParsedKey {
  namespace: string;
  /** Undefined when the kind segment is not one of RECORD_KINDS. */
  kind: RecordKind | undefined;
  /** Unescaped id segments after the kind. */
  ids: string[];
}

/** Splits a key into namespace, kind and unescaped ids (inverse of the builders). */
export function parseKey(key: string): ParsedKey {
  const [namespace, kindSegment, ...rest] = validateKey(key).split("/");
  const kind = (Object.keys(RECORD_KINDS) as RecordKind[]).find((k) => RECORD_KINDS[k] === kindSegment);
  return { namespace: namespace as string, kind, ids: rest.map(unescapeSegment) };
}
