// Maps one engine step's KV events (core/kv/kv-events.ts) to vLLM's wire events for the
// raw PUB. Faithful to current vLLM (KVCacheEvent with group_idx/kv_cache_spec_kind): a BlockStored
// carries extra_keys [null per block], group_idx 0, kv_cache_spec_kind "full_attention" and a
// BlockRemoved group_idx 0, exactly the bytes fixtures/vectors.json pins for one full-attention group.
import { KvcrError } from "../../lib/errors.ts";
import type { KvEvent, KvTier } from "../../core/kv/kv-events.ts";
import { Medium, OWNERSHIP_KVCR, type ExtraKeys, type HostMedium, type VllmKvEvent } from "../../protocol/kv-events/index.ts";

/** Only attention group of the mock model (vLLM numbers KV-cache groups from 0). */
const GROUP_IDX = 0;
/** vLLM's spec kind of a plain full-attention layer group. */
const FULL_ATTENTION_KIND = "full_attention";
const CLEARED: VllmKvEvent = Object.freeze({ type: "AllBlocksCleared" });

// extra_keys of blocks without MM inputs, LoRA or cache salt: one null per block. Shared, frozen
// arrays per length keep the hot path from allocating them every step.
const NULL_KEYS_CACHED = 256;
const nullKeysByLength: (readonly ExtraKeys[])[] = [];
function nullExtraKeys(blocks: number): readonly ExtraKeys[] {
  if (blocks > NULL_KEYS_CACHED) return new Array<ExtraKeys>(blocks).fill(null);
  return (nullKeysByLength[blocks] ??= Object.freeze(new Array<ExtraKeys>(blocks).fill(null)));
}

// A LoRA adapter's blocks: vLLM puts the adapter's name first in each block's extra hash keys and
// sends them as extra_keys, one (lora_name,) tuple per block, beside lora_name and lora_id.
const adapterKeysCache = new Map<string, readonly ExtraKeys[]>();
function adapterExtraKeys(loraName: string, blocks: number): readonly ExtraKeys[] {
  const cacheKey = `${blocks}\u0000${loraName}`;
  let keys = adapterKeysCache.get(cacheKey);
  if (keys === undefined) {
    const one: ExtraKeys = Object.freeze([loraName]);
    keys = Object.freeze(new Array<ExtraKeys>(blocks).fill(one));
    if (adapterKeysCache.size < 4096 && blocks <= NULL_KEYS_CACHED) adapterKeysCache.set(cacheKey, keys);
  }
  return keys;
}

/** vLLM's lora_id of an adapter name (the id the worker gave it at load; null when unknown). */
export type LoraIdOf = (loraName: string) => number | null;

/** vLLM's medium for an engine tier: G1 = GPU, G2 = `hostMedium` (default CPU_PINNED, as Dynamo's mocker). */
export function mediumOf(tier: KvTier, hostMedium: HostMedium = Medium.CpuPinned): Medium {
  return tier === "device" ? Medium.Gpu : hostMedium;
}

// `ownership: undefined` (not a missing key) keeps one object shape per event type; the encoder
// omits undefined optional keys, so the bytes are the same.
/**
 * The vLLM events for one step, in order. `kvcrOwnsHost` (state-agent mode) marks host-tier events
 * `ownership: "kvcr"`; device-tier events never carry ownership (GPU blocks are the framework's own).
 * Throws KvcrError EVENT_INVALID when a stored event's token count is not blocks × blockSize.
 */
export function toVllmEvents(events: readonly KvEvent[], kvcrOwnsHost: boolean, hostMedium: HostMedium = Medium.CpuPinned, loraIdOf?: LoraIdOf): VllmKvEvent[] {
  const out = new Array<VllmKvEvent>(events.length);
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    switch (e.kind) {
      case "stored": {
        const blocks = e.blockHashes.length;
        const tokens = e.tokenIds;
        if (tokens.length !== blocks * e.blockSize) {
          throw new KvcrError("EVENT_INVALID", `engine stored event has ${tokens.length} token ids for ${blocks} blocks of ${e.blockSize}; expected ${blocks * e.blockSize}`);
        }
        // The engine's token ids may be a view into a reused buffer: copy them out.
        const tokenIds = new Array<number>(tokens.length);
        for (let t = 0; t < tokens.length; t++) tokenIds[t] = tokens[t]!;
        const lora = e.loraName;
        out[i] = {
          type: "BlockStored",
          blockHashes: e.blockHashes,
          parentBlockHash: e.parentHash,
          tokenIds,
          blockSize: e.blockSize,
          loraId: lora === undefined ? null : (loraIdOf?.(lora) ?? null),
          medium: mediumOf(e.tier, hostMedium),
          loraName: lora ?? null,
          extraKeys: lora === undefined ? nullExtraKeys(blocks) : adapterExtraKeys(lora, blocks),
          groupIdx: GROUP_IDX,
          kvCacheSpecKind: FULL_ATTENTION_KIND,
          ownership: kvcrOwnsHost && e.tier === "host" ? OWNERSHIP_KVCR : undefined,
        };
        break;
      }
      case "removed":
        out[i] = {
          type: "BlockRemoved",
          blockHashes: e.blockHashes,
          medium: mediumOf(e.tier, hostMedium),
          groupIdx: GROUP_IDX,
          ownership: kvcrOwnsHost && e.tier === "host" ? OWNERSHIP_KVCR : undefined,
        };
        break;
      case "cleared":
        out[i] = CLEARED;
        break;
    }
  }
  return out;
}
