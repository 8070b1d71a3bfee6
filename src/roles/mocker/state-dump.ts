// A full state dump of one (worker, rank): every block resident in each tier as engine `stored`
// events (a chain of one tier per event), parents first, so a raw-stream consumer that lost its place
// (the agent, when replay cannot fill a gap) rebuilds the exact residency from one payload.
// A resident block whose ancestor is resident nowhere gets that ancestor stored on the device tier
// and removed again at the end: the consumer then knows it as a parent (router hashes chain from
// it) without holding it. The wire form and the seq it reflects: docs/http-api.md ("State dump").
import type { MockEngine } from "../../core/engine/mock-engine.ts";
import type { KvEvent, KvTier } from "../../core/kv/kv-events.ts";

export interface StateDumpEvents {
  events: KvEvent[];
  /** Resident blocks left out because a block of their parent chain has no token record. */
  unresolved: number;
}

const TIERS: readonly KvTier[] = ["device", "host"];

/** What a dump reads of an engine. */
export type DumpableEngine = Pick<MockEngine, "blockRecord"> & { readonly config: { readonly blockSize: number; readonly numHostBlocks: number }; inspect(): { resident: Record<KvTier, bigint[]> } };

/** Undefined when the engine keeps no token records (no host tier): no dump can be built. */
export function stateDumpEvents(engine: DumpableEngine): StateDumpEvents | undefined {
  const blockSize = engine.config.blockSize;
  const resident = engine.inspect().resident;
  // Token records are kept by the host tier's registry only.
  if (engine.config.numHostBlocks === 0) return undefined;
  const residentIn: Record<KvTier, Set<bigint>> = { device: new Set(resident.device), host: new Set(resident.host) };
  const done: Record<KvTier, Set<bigint>> = { device: new Set(), host: new Set() };
  /** Stored in any tier so far: a parent the consumer can resolve. */
  const known = new Set<bigint>();
  const transient: bigint[] = [];
  const events: KvEvent[] = [];
  let unresolved = 0;

  const ensure = (tier: KvTier, hash: bigint): void => {
    // Walk up until a parent the consumer knows (or the root), then store from the top down.
    const chain: { tier: KvTier; hash: bigint; parent: bigint | null; local: bigint; tokens: Uint32Array; transient: boolean; loraName: string | undefined }[] = [];
    let t = tier;
    let h = hash;
    let isTransient = false;
    for (;;) {
      if (done[t].has(h)) break;
      const rec = engine.blockRecord(h);
      if (rec === undefined) {
        unresolved++;
        return;
      }
      chain.push({ tier: t, hash: h, parent: rec.parentHash, local: rec.localHash, tokens: rec.tokenIds.slice(), transient: isTransient, loraName: rec.loraName });
      const p = rec.parentHash;
      if (p === null || known.has(p)) break;
      isTransient = !residentIn.device.has(p) && !residentIn.host.has(p);
      t = residentIn.device.has(p) || isTransient ? "device" : "host";
      h = p;
    }
    // Top down; a run of one tier (each block the parent of the next) is one event, as vLLM stores a prompt.
    for (let i = chain.length - 1; i >= 0; ) {
      const first = chain[i]!;
      let j = i;
      while (j > 0 && chain[j - 1]!.tier === first.tier && chain[j - 1]!.loraName === first.loraName) j--;
      const run = chain.slice(j, i + 1).reverse();
      const tokenIds = new Uint32Array(run.length * blockSize);
      run.forEach((c, k) => tokenIds.set(c.tokens, k * blockSize));
      const stored: KvEvent = { kind: "stored", tier: first.tier, parentHash: first.parent, blockHashes: run.map((c) => c.hash), localHashes: run.map((c) => c.local), tokenIds, blockSize };
      events.push(first.loraName === undefined ? stored : { ...stored, loraName: first.loraName });
      for (const c of run) {
        done[c.tier].add(c.hash);
        known.add(c.hash);
        if (c.transient) transient.push(c.hash);
      }
      i = j - 1;
    }
  };

  for (const tier of TIERS) for (const h of resident[tier]) ensure(tier, h);
  if (transient.length > 0) events.push({ kind: "removed", tier: "device", blockHashes: transient });
  return { events, unresolved };
}
