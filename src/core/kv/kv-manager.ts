// The KV side of one engine rank: the G1 pool and, when configured, the G2 side (host-offload.ts).
// It turns per-request operations (match a prefix, admit, grow, commit full blocks, release,
// offload) into cell changes and KV events, each event emitted where the residency changes.
import type { BlockHasher } from "./block-hash.ts";
import { RELEASED_FIFO_BLOCKS, type BlockTokenRegistry } from "./block-token-registry.ts";
import { G1BlockPool } from "./g1-block-pool.ts";
import { HostOffload } from "./host-offload.ts";
import type { HostTier } from "./host-tier.ts";
import { KvEventBuffer, type KvTier } from "./kv-events.ts";
import { RequestPhase, type RequestState } from "../scheduler/request-state.ts";

export interface KvManagerConfig {
  blockSize: number;
  numGpuBlocks: number;
  numHostBlocks: number;
  enablePrefixCaching: boolean;
  /** On the engine's clock (already scaled by the speedup ratio); 0 = instant. */
  d2hBandwidthGbps: number;
  h2dBandwidthGbps: number;
  kvBytesPerToken: number;
  releasedFifoBlocks?: number;
  /** Also copy blocks completed by generated tokens to G2 (default: prompt blocks only, as vLLM). */
  offloadDecodeBlocks?: boolean;
}

export class KvManager {
  readonly g1: G1BlockPool;
  /** The G2 side; null without a host tier. */
  readonly offload: HostOffload | null;
  readonly events = new KvEventBuffer();
  readonly blockSize: number;
  readonly instantH2d: boolean;
  private readonly prefixCaching: boolean;
  private readonly evicted: bigint[] = [];
  /** G1 prefix hits found by the last matchPrefix, and the G2 continuation after them. */
  readonly hitCells: number[] = [];
  readonly hostHitCells: number[] = [];
  /** Latest d2h fence among cells allocated since beginStep. */
  fenceMaxMs = 0;
  /** When the in-flight d2h copies of the last match's G2 hits land (0 = none in flight). */
  hostReadyAtMs = 0;
  private readonly offloadDecodeBlocks: boolean;
  /** Requests whose remote pull landed since the engine last took them. */
  readonly remoteLanded: RequestState[] = [];

  constructor(cfg: KvManagerConfig, private readonly hasher: BlockHasher) {
    this.blockSize = cfg.blockSize;
    this.prefixCaching = cfg.enablePrefixCaching;
    this.offloadDecodeBlocks = cfg.offloadDecodeBlocks ?? false;
    const hostOn = cfg.numHostBlocks > 0 && cfg.enablePrefixCaching;
    this.g1 = new G1BlockPool(cfg.numGpuBlocks, hostOn);
    this.offload =
      hostOn
        ? new HostOffload(
            {
              numHostBlocks: cfg.numHostBlocks,
              blockSize: cfg.blockSize,
              bytesPerBlock: cfg.kvBytesPerToken * cfg.blockSize,
              d2hBandwidthGbps: finiteOrZero(cfg.d2hBandwidthGbps),
              h2dBandwidthGbps: finiteOrZero(cfg.h2dBandwidthGbps),
              releasedFifoBlocks: cfg.releasedFifoBlocks ?? RELEASED_FIFO_BLOCKS,
            },
            this.events,
          )
        : null;
    this.instantH2d = this.offload?.instantH2d ?? true;
  }

  get host(): HostTier | null {
    return this.offload?.tier ?? null;
  }

  /** Token ids are only kept when there is a host tier to store them for. */
  private get registry(): BlockTokenRegistry | null {
    return this.offload?.registry ?? null;
  }

  beginStep(nowMs: number): void {
    this.fenceMaxMs = 0;
    this.offload?.land(nowMs);
  }

  /**
   * Longest usable cached prefix of `req`: G1 hits (in hitCells), capped at length − 1 tokens in
   * whole blocks (vLLM always computes a prompt's last token), then the G2 continuation (in
   * hostHitCells), which may run to the prompt's end: after a full load only the last token is
   * recomputed (matchedTokens). A G2 hit whose copy is still in flight counts (the request waits
   * for it, hostReadyAtMs); the hits are touched in G2's LRU, first block last, as vLLM's
   * offloading manager touches a lookup. Returns the G1 hit count.
   */
  matchPrefix(req: RequestState): number {
    this.hitCells.length = 0;
    this.hostHitCells.length = 0;
    this.hostReadyAtMs = 0;
    if (!this.prefixCaching) return 0;
    const cap = Math.min(Math.floor((req.length - 1) / this.blockSize), req.numHashed);
    const words = req.seqWords;
    let k = 0;
    for (; k < cap; k++) {
      const cell = this.g1.lookup(words[2 * k]!, words[2 * k + 1]!);
      if (cell === -1) break;
      this.hitCells.push(cell);
    }
    const host = this.host;
    if (host !== null) {
      const hostCap = Math.min(Math.floor(req.length / this.blockSize), req.numHashed);
      for (let j = k; j < hostCap; j++) {
        const hs = host.lookupCell(words[2 * j]!, words[2 * j + 1]!);
        if (hs === -1) break;
        if (host.isPending(hs)) this.hostReadyAtMs = Math.max(this.hostReadyAtMs, host.pendingLandsAtMs(hs));
        else if (!host.isResident(hs)) break;
        this.hostHitCells.push(hs);
      }
      for (let i = this.hostHitCells.length - 1; i >= 0; i--) host.touch(this.hostHitCells[i]!);
    }
    return k;
  }

  /** Tokens of `req` the last matchPrefix found cached (G1 then G2), at most length − 1. */
  matchedTokens(req: RequestState): number {
    return Math.min((this.hitCells.length + this.hostHitCells.length) * this.blockSize, req.length - 1);
  }

  /** Whether the last matched prefix plus blocks up to `targetTokens` fit in G1 right now. */
  canAdmit(req: RequestState, targetTokens: number): boolean {
    let fromFree = 0;
    for (const cell of this.hitCells) if (this.g1.refcount[cell] === 0) fromFree++;
    const newBlocks = Math.ceil(targetTokens / this.blockSize) - this.hitCells.length;
    return fromFree + newBlocks <= this.g1.freeBlocks;
  }

  /**
   * Admits `req` with the last matched prefix (canAdmit must hold): takes the G1 hits, allocates
   * cells up to `targetTokens`, and starts the G2 load. Returns true if the request may compute
   * now, false if it waits in the loading phase.
   */
  admit(req: RequestState, targetTokens: number, nowMs: number, pullLandsAtMs = nowMs): boolean {
    const k = this.hitCells.length;
    const h = this.hostHitCells.length;
    for (const cell of this.hitCells) {
      this.g1.acquire(cell);
      req.blocks.push(cell);
    }
    req.numCommitted = k;
    req.offloadCursor = 0;
    // A remote pull (req.remoteTokens) fills the blocks after the local hits.
    req.numComputed = this.matchedTokens(req) + req.remoteTokens;
    this.grow(req, Math.max(targetTokens, req.numComputed));
    if (h === 0 && req.remoteTokens === 0) return true;
    let landsAtMs = pullLandsAtMs;
    if (h > 0) {
      // A hit still being copied to G2 is loaded once its copy lands (vLLM waits; never recomputed).
      let notBeforeMs = Math.max(nowMs, this.hostReadyAtMs);
      for (let i = k; i < k + h; i++) notBeforeMs = Math.max(notBeforeMs, this.g1.fenceUntilMs[req.blocks[i]!]!);
      landsAtMs = Math.max(landsAtMs, this.offload!.load(notBeforeMs, h));
      for (const hs of this.hostHitCells) this.host!.pin(hs);
      req.loadHostCells = this.hostHitCells.slice();
    }
    req.loadUntilMs = landsAtMs;
    if (landsAtMs <= nowMs) {
      this.finishLoad(req);
      return true;
    }
    req.phase = RequestPhase.loading;
    return false;
  }

  /**
   * The G2 load of `req` landed: its loaded blocks join the G1 prefix cache. A waited-for copy
   * whose store was dropped (token ids unrecoverable) ends the load there: the rest is computed.
   * Returns the tokens that were counted as loaded but must be computed after all.
   */
  finishLoad(req: RequestState): number {
    const host = this.host!; // read only when G2 blocks were loaded
    const cells = req.loadHostCells;
    const first = req.numCommitted; // the G1 hits; the loaded blocks follow them
    const before = req.numComputed;
    for (let i = 0; i < cells.length; i++) {
      if (!host.isResident(cells[i]!)) {
        req.numComputed = Math.min(req.numComputed, (first + i) * this.blockSize);
        break;
      }
    }
    // Unpinned last to first, so the prefix's first block ends most recently used (as touched).
    for (let i = cells.length - 1; i >= 0; i--) host.unpin(cells[i]!);
    req.loadHostCells = [];
    req.phase = RequestPhase.running;
    if (req.remoteTokens > 0) {
      // The pulled blocks join the prefix cache now (their BlockStored, as vLLM's scheduler once a remote load finishes).
      req.remotePrefill = false;
      this.remoteLanded.push(req);
    }
    this.commit(req);
    return before - req.numComputed;
  }

  /**
   * Allocates cells so `req` can hold `targetTokens`; all or nothing. Evicted cached blocks
   * become `removed` events; a cell still fenced by a d2h copy raises fenceMaxMs.
   */
  grow(req: RequestState, targetTokens: number): boolean {
    const need = Math.ceil(targetTokens / this.blockSize) - req.blocks.length;
    if (need <= 0) return true;
    if (need > this.g1.freeBlocks) return false;
    const evicted = this.evicted;
    for (let i = 0; i < need; i++) {
      const cell = this.g1.allocate(evicted);
      const fences = this.g1.fenceUntilMs; // read after allocate: the pool's arrays may have grown
      if (fences.length > 0 && fences[cell]! > this.fenceMaxMs) this.fenceMaxMs = fences[cell]!;
      req.blocks.push(cell);
    }
    if (evicted.length > 0) {
      for (const h of evicted) this.emitRemoved("device", h);
      evicted.length = 0;
    }
    return true;
  }

  /**
   * Registers the newly full blocks of `req` in G1 and emits their `stored` events: those computed,
   * or (`tokens`) those this step will compute, so a request admitted later in the same pass hits them.
   */
  commit(req: RequestState, tokens = req.numComputed): void {
    const full = Math.floor(tokens / this.blockSize);
    if (full <= req.numCommitted) return;
    if (!this.prefixCaching) {
      req.numCommitted = full;
      return;
    }
    this.ensureHashes(req, full);
    const words = req.seqWords;
    let runStart = -1;
    for (let i = req.numCommitted; i < full; i++) {
      if (this.g1.register(req.blocks[i]!, words[2 * i]!, words[2 * i + 1]!)) {
        if (runStart === -1) runStart = i;
      } else if (runStart !== -1) {
        // Another cell already caches this hash (computed concurrently): the run breaks here.
        this.emitDeviceRun(req, runStart, i);
        runStart = -1;
      }
    }
    if (runStart !== -1) this.emitDeviceRun(req, runStart, full);
    req.numCommitted = full;
  }

  /** Frees every cell of `req`, tail first so a shared prefix is evicted last. */
  release(req: RequestState): void {
    const blocks = req.blocks;
    for (let i = blocks.length - 1; i >= 0; i--) this.g1.release(blocks[i]!);
    req.blocks = [];
    req.numComputed = 0;
    req.numCommitted = 0;
    req.offloadCursor = 0;
    if (req.loadHostCells.length > 0) {
      for (let i = req.loadHostCells.length - 1; i >= 0; i--) this.host!.unpin(req.loadHostCells[i]!);
      req.loadHostCells = [];
    }
  }

  /**
   * Marks the committed blocks of `req` not yet considered as candidates for a d2h copy: prompt
   * blocks only unless offloadDecodeBlocks (vLLM's offload_prompt_only, Dynamo's PromptOnly).
   */
  queueOffload(req: RequestState): void {
    const off = this.offload;
    if (off === null) return;
    const end = this.offloadDecodeBlocks ? req.numCommitted : Math.min(req.numCommitted, Math.floor(req.promptLen / this.blockSize));
    if (end <= req.offloadCursor) return;
    let prev = -2;
    for (let i = req.offloadCursor; i < end; i++) if (off.candidate(req.seqHashes[i]!, req.blocks[i]!, i !== prev + 1)) prev = i;
    req.offloadCursor = end;
  }

  /** Once per step, at the step's end: copies the candidates to G2 and lands what is due. */
  flushOffload(endMs: number): void {
    this.offload?.flush(endMs, this.g1.fenceUntilMs);
  }

  nextLandingMs(): number | undefined {
    return this.offload?.nextLandingMs();
  }

  /**
   * Prefix-cache reset (only with no block in use): G1 emptied, one G1 `cleared` event. G2 and
   * its in-flight copies stay, as vLLM's reset_prefix_cache clears the GPU block pool only.
   */
  clear(): void {
    const registry = this.registry;
    if (registry !== null) for (const h of this.g1.residentHashes()) registry.removed("device", h);
    this.g1.clear();
    this.events.cleared("device");
  }

  private ensureHashes(req: RequestState, full: number): void {
    const bs = this.blockSize;
    for (let i = req.numHashed; i < full; i++) {
      const local = this.hasher.localHash(req.tokens.subarray(i * bs, (i + 1) * bs), req.hashSeed);
      req.localHashes[i] = local;
      req.seqHashes[i] = this.hasher.sequenceHash(i > 0 ? req.seqHashes[i - 1]! : undefined, local);
    }
    if (full > req.numHashed) req.numHashed = full;
  }

  private emitDeviceRun(req: RequestState, from: number, to: number): void {
    const bs = this.blockSize;
    const hashes: bigint[] = [];
    const locals: bigint[] = [];
    for (let i = from; i < to; i++) {
      hashes.push(req.seqHashes[i]!);
      locals.push(req.localHashes[i]!);
    }
    const parent = from > 0 ? req.seqHashes[from - 1]! : null;
    const registry = this.registry;
    if (registry !== null) {
      // Reads the bigints already boxed above: a host tier adds no allocation per block here.
      for (let i = from; i < to; i++) registry.storedAt("device", hashes[i - from]!, i > from ? hashes[i - from - 1]! : parent, locals[i - from]!, req.tokens, i * bs, bs, req.loraName);
    }
    this.events.stored("device", parent, hashes, locals, req.tokens.subarray(from * bs, to * bs), bs, req.loraName);
  }

  private emitRemoved(tier: KvTier, hash: bigint): void {
    this.events.removed(tier, hash);
    this.registry?.removed(tier, hash);
  }

}

function finiteOrZero(gbps: number): number {
  return Number.isFinite(gbps) ? gbps : 0;
}
