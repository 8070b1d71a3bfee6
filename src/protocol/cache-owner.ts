// KVCR identities (docs/ARCHITECTURE.md, Glossary): CacheOwner ids
// `<32 hex>:<32 hex>/<16 hex>/<32 hex>` (cache semantics : routing scope / datacenter / stable
// ordinal), the per-worker raw topic derived from them, and the raw-host rule for endpoints the state
// agent dials.

export type Hash64 = (data: Uint8Array, seed: bigint) => bigint;

export interface CacheOwnerParts {
  semantics: string; // 32 hex
  scope: string; // 32 hex
  datacenter: string; // 16 hex
  ordinal: bigint; // formatted as 32 hex
}

const CACHE_OWNER_RE = /^([0-9a-f]{32}):([0-9a-f]{32})\/([0-9a-f]{16})\/([0-9a-f]{32})$/;
const encoder = new TextEncoder();

export function formatCacheOwner(p: CacheOwnerParts): string {
  return `${p.semantics}:${p.scope}/${p.datacenter}/${p.ordinal.toString(16).padStart(32, "0")}`;
}

export function parseCacheOwner(id: string): CacheOwnerParts | undefined {
  const m = CACHE_OWNER_RE.exec(id);
  if (!m) return undefined;
  return { semantics: m[1]!, scope: m[2]!, datacenter: m[3]!, ordinal: BigInt(`0x${m[4]}`) };
}

/** The indexer domain: everything before the first `/` (semantics:scope). */
export function indexerDomain(id: string): string {
  return id.slice(0, id.indexOf("/"));
}

/** 16 lowercase hex of a 64-bit hash of `text` (seed 0). */
export function hex64(hash: Hash64, text: string, seed = 0n): string {
  return hash(encoder.encode(text), seed).toString(16).padStart(16, "0");
}

/** 32 hex: two 64-bit hashes of `text` with different seeds, deterministic across runs. */
export function hex128(hash: Hash64, text: string): string {
  return hex64(hash, text, 0n) + hex64(hash, text, 1n);
}

/** Deterministic defaults: semantics from the model, scope and datacenter from the namespace. */
export function defaultOwnerParts(hash: Hash64, modelName: string, namespace: string): Omit<CacheOwnerParts, "ordinal"> {
  return {
    semantics: hex128(hash, `kvcr/cache-semantics/${modelName}`),
    scope: hex128(hash, `kvcr/routing-scope/${namespace}`),
    datacenter: hex64(hash, `kvcr/datacenter/${namespace}`),
  };
}

/** The raw topic of a worker: `kvcr-` + 16 hex of XXH3-64 over its CacheOwner ids joined by ",". */
export function rawTopic(hash: Hash64, ownerIds: readonly string[]): string {
  return `kvcr-${hex64(hash, ownerIds.join(","))}`;
}

/**
 * Checks a `--kv-state-agent-raw-host`: the agent dials it, so wildcards, `localhost` (ambiguous
 * between IPv4 and IPv6 resolvers) and anything with a scheme, port or path are refused.
 * Returns the reason it is refused, or undefined when it is a usable host.
 */
export function rawHostProblem(host: string): string | undefined {
  if (host.trim() === "") return "must not be empty";
  if (host !== host.trim()) return "must not have surrounding spaces";
  if (host === "*" || host === "0.0.0.0" || host === "::" || host === "[::]") return "is a wildcard address; give the address the agent can dial";
  if (host.toLowerCase() === "localhost") return "localhost is ambiguous (IPv4 or IPv6); give an IP such as 127.0.0.1";
  if (host.includes("://")) return "must be a bare host without a scheme";
  if (host.includes("/")) return "must be a bare host without a path";
  if (host.startsWith("[")) {
    const m = /^\[([0-9a-fA-F:.]+)\]$/.exec(host);
    if (!m || !m[1]!.includes(":")) return "must be a bracketed IPv6 address like [fd00::1] with no port";
    return undefined;
  }
  if (host.includes(":")) return host.split(":").length > 2 ? "an IPv6 address must be bracketed, e.g. [fd00::1]" : "must not include a port";
  if (/^\d+(\.\d+){3}$/.test(host)) {
    return host.split(".").every((o) => Number(o) <= 255) ? undefined : "is not a valid IPv4 address";
  }
  if (/^(?=.{1,253}$)([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/.test(host)) return undefined;
  return "is not a hostname, IPv4 address or bracketed IPv6 address";
}
