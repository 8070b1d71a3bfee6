// The KV side of one engine rank: G1 pool, optional G2 host tier with its two transfer lanes,
// the token registry for host stores, and the event buffer. It turns per-request operations
// (match a prefix, admit, grow, commit full blocks, release, offload) into slot changes and
// KV events, so every event is emitted at the exact point the residency changes.
import type { BlockHasher } from "./block-hash.ts";
import { BlockTokenRegistry, RELEASED_FIFO_BLOCKS } from "./block-token-registry.ts";
import { G1BlockPool } from "./g1-block-pool.ts";
import { HostTier } from "./host-tier.ts";
import { KvEventBuffer, type KvTier } from "./kv-events.ts";
import { TransferLane } from "./transfer-lane.ts";
import { RequestPhase, type RequestState } from "../scheduler/request-state.ts";

export interface KvManagerConfig {
  blockSize: number;
  numGpuBlocks: number;
  numHostBlocks: number;
  enablePrefixCaching: boolean;
  /** Already multiplied by the speedup ratio (Infinity or 0 = instant). */
  d2hBandwidthGbps: number;
  h2dBandwidthGbps: number;
  kvBytesPerToken: number;
  releasedFifoBlocks?: number;
}

/** A host store the engine refused because a block's token ids could not be recovered. */
export interface DroppedStore {
  readonly tier: KvTier;
  readonly blockHashes: readonly bigint[];
  readonly reason: string;
}

interface PendingCopy {
  landsAtMs: number;
  hostSlots: number[];
  /** Index into hostSlots where each chain run (one future `stored` event) starts. */
  runStarts: number[];
}

export class KvManager {
  readonly g1: G1BlockPool;
  readonly host: HostTier | null;
  readonly registry: BlockTokenRegistry | null;
  readonly events = new KvEventBuffer();
  readonly blockSize: number;
  private readonly prefixCaching: boolean;
  private readonly bytesPerBlock: number;
  private readonly d2h: TransferLane;
  private readonly h2d: TransferLane;
  readonly instantH2d: boolean;
  private readonly pending: PendingCopy[] = [];
  private pendingHead = 0;
  // Offload candidates of the current step (sequence hash, source G1 slot, new-run flag).
  private readonly offHashes: bigint[] = [];
  private readonly offSlots: number[] = [];
  private readonly offRunStart: boolean[] = [];
  private readonly evicted: bigint[] = [];
  /** G1 prefix hits found by the last matchPrefix, and the G2 continuation after them. */
  readonly hitSlots: number[] = [];
  readonly hostHitSlots: number[] = [];
  /** Latest d2h fence among slots allocated since beginStep. */
  fenceMaxMs = 0;
  droppedStores: DroppedStore[] = [];
  droppedStoreCount = 0;
  skippedOffloadBlocks = 0;
  eventsEmitted = 0;

  constructor(cfg: KvManagerConfig, private readonly hasher: BlockHasher) {
    this.blockSize = cfg.blockSize;
    this.prefixCaching = cfg.enablePrefixCaching;
    this.g1 = new G1BlockPool(cfg.numGpuBlocks);
    const hostOn = cfg.numHostBlocks > 0 && cfg.enablePrefixCaching;
    this.host = hostOn ? new HostTier(cfg.numHostBlocks) : null;
    // Token ids are only needed for host stores; without G2 no copies are kept at all.
    this.registry = hostOn ? new BlockTokenRegistry(cfg.releasedFifoBlocks ?? RELEASED_FIFO_BLOCKS) : null;
    this.bytesPerBlock = cfg.kvBytesPerToken * cfg.blockSize;
    this.d2h = new TransferLane(finiteOrZero(cfg.d2hBandwidthGbps));
    this.h2d = new TransferLane(finiteOrZero(cfg.h2dBandwidthGbps));
    this.instantH2d = !(cfg.h2dBandwidthGbps > 0 && Number.isFinite(cfg.h2dBandwidthGbps));
  }

  beginStep(nowMs: number): void {
    this.fenceMaxMs = 0;
    this.land(nowMs);
  }

  /**
   * Longest usable cached prefix of `req` in blocks: G1 hits (in hitSlots) then the G2
   * continuation (in hostHitSlots), capped at length − 1 tokens in whole blocks (vLLM always
   * computes a prompt's last token). Returns the G1 hit count.
   */
  matchPrefix(req: RequestState): number {
    this.hitSlots.length = 0;
    this.hostHitSlots.length = 0;
    if (!this.prefixCaching) return 0;
    const cap = Math.min(Math.floor((req.length - 1) / this.blockSize), req.numHashed);
    let k = 0;
    for (; k < cap; k++) {
      const slot = this.g1.lookup(req.seqHashes[k]!);
      if (slot === -1) break;
      this.hitSlots.push(slot);
    }
    if (this.host !== null) {
      for (let j = k; j < cap; j++) {
        const hs = this.host.residentSlot(req.seqHashes[j]!);
        if (hs === -1) break;
        this.hostHitSlots.push(hs);
      }
    }
    return k;
  }

  /** Whether the last matched prefix plus blocks up to `targetTokens` fit in G1 right now. */
  canAdmit(req: RequestState, targetTokens: number): boolean {
    let fromFree = 0;
    for (const slot of this.hitSlots) if (this.g1.refcount[slot] === 0) fromFree++;
    const newBlocks = Math.ceil(targetTokens / this.blockSize) - this.hitSlots.length;
    return fromFree + newBlocks <= this.g1.freeBlocks;
  }

  /**
   * Admits `req` with the last matched prefix (canAdmit must hold): takes the G1 hits, allocates
   * slots up to `targetTokens`, and starts the G2 load. Returns true if the request may compute
   * now, false if it waits in the loading phase.
   */
  admit(req: RequestState, targetTokens: number, nowMs: number): boolean {
    const k = this.hitSlots.length;
    const h = this.hostHitSlots.length;
    for (const slot of this.hitSlots) {
      this.g1.acquire(slot);
      req.blocks.push(slot);
    }
    req.numCommitted = k;
    req.offloadCursor = 0;
    req.numComputed = (k + h) * this.blockSize;
    this.grow(req, Math.max(targetTokens, req.numComputed));
    if (h === 0) return true;
    let notBeforeMs = nowMs;
    for (let i = k; i < k + h; i++) notBeforeMs = Math.max(notBeforeMs, this.g1.fenceUntilMs[req.blocks[i]!]!);
    const landsAtMs = this.h2d.submit(notBeforeMs, h * this.bytesPerBlock);
    for (const hs of this.hostHitSlots) this.host!.pin(hs);
    req.loadHostSlots = this.hostHitSlots.slice();
    req.loadUntilMs = landsAtMs;
    if (landsAtMs <= nowMs) {
      this.finishLoad(req);
      return true;
    }
    req.phase = RequestPhase.loading;
    return false;
  }

  /** The G2 load of `req` landed: its loaded blocks join the G1 prefix cache. */
  finishLoad(req: RequestState): void {
    for (const hs of req.loadHostSlots) this.host!.unpin(hs);
    req.loadHostSlots = [];
    req.phase = RequestPhase.running;
    this.commit(req);
  }

  /**
   * Allocates slots so `req` can hold `targetTokens`; all or nothing. Evicted cached blocks
   * become `removed` events; a slot still fenced by a d2h copy raises fenceMaxMs.
   */
  grow(req: RequestState, targetTokens: number): boolean {
    const need = Math.ceil(targetTokens / this.blockSize) - req.blocks.length;
    if (need <= 0) return true;
    if (need > this.g1.freeBlocks) return false;
    const evicted = this.evicted;
    for (let i = 0; i < need; i++) {
      const slot = this.g1.allocate(evicted);
      const fence = this.g1.fenceUntilMs[slot]!;
      if (fence > this.fenceMaxMs) this.fenceMaxMs = fence;
      req.blocks.push(slot);
    }
    if (evicted.length > 0) {
      for (const h of evicted) this.emitRemoved("device", h);
      evicted.length = 0;
    }
    return true;
  }

  /** Registers the newly full blocks of `req` in G1 and emits their `stored` events. */
  commit(req: RequestState): void {
    const full = Math.floor(req.numComputed / this.blockSize);
    if (full <= req.numCommitted) return;
    if (!this.prefixCaching) {
      req.numCommitted = full;
      return;
    }
    this.ensureHashes(req, full);
    let runStart = -1;
    for (let i = req.numCommitted; i < full; i++) {
      if (this.g1.register(req.blocks[i]!, req.seqHashes[i]!)) {
        if (runStart === -1) runStart = i;
      } else if (runStart !== -1) {
        // Another slot already caches this hash (computed concurrently): the run breaks here.
        this.emitDeviceRun(req, runStart, i);
        runStart = -1;
      }
    }
    if (runStart !== -1) this.emitDeviceRun(req, runStart, full);
    req.numCommitted = full;
  }

  /** Frees every slot of `req`, tail first so a shared prefix is evicted last. */
  release(req: RequestState): void {
    const blocks = req.blocks;
    for (let i = blocks.length - 1; i >= 0; i--) this.g1.release(blocks[i]!);
    req.blocks = [];
    req.numComputed = 0;
    req.numCommitted = 0;
    req.offloadCursor = 0;
    if (req.loadHostSlots.length > 0) {
      for (const hs of req.loadHostSlots) this.host!.unpin(hs);
      req.loadHostSlots = [];
    }
  }

  /** Marks the committed blocks of `req` not yet considered as candidates for a d2h copy. */
  queueOffload(req: RequestState): void {
    if (this.host === null) return;
    const end = req.numCommitted;
    let prevIndex = -2;
    for (let i = req.offloadCursor; i < end; i++) {
      const hash = req.seqHashes[i]!;
      if (this.host.has(hash)) continue;
      this.offHashes.push(hash);
      this.offSlots.push(req.blocks[i]!);
      this.offRunStart.push(i !== prevIndex + 1);
      prevIndex = i;
    }
    req.offloadCursor = end;
  }

  /**
   * Once per step: copies this step's candidates missing from G2 through the FIFO d2h lane,
   * starting at `endMs` (the step's end), then lands whatever is due by then.
   */
  flushOffload(endMs: number): void {
    const host = this.host;
    if (host === null) return;
    const n = this.offHashes.length;
    if (n > 0) {
      const hostSlots: number[] = [];
      const runStarts: number[] = [];
      const g1Slots: number[] = [];
      let broken = true;
      for (let i = 0; i < n; i++) {
        const hash = this.offHashes[i]!;
        if (host.has(hash)) {
          broken = true;
          continue;
        }
        const slot = host.reserve(hash, this.evicted);
        for (const h of this.evicted) this.emitRemoved("host", h);
        this.evicted.length = 0;
        if (slot === -1) {
          this.skippedOffloadBlocks++;
          broken = true;
          continue;
        }
        if (broken || this.offRunStart[i]) runStarts.push(hostSlots.length);
        broken = false;
        hostSlots.push(slot);
        g1Slots.push(this.offSlots[i]!);
      }
      this.offHashes.length = 0;
      this.offSlots.length = 0;
      this.offRunStart.length = 0;
      if (hostSlots.length > 0) {
        const landsAtMs = this.d2h.submit(endMs, hostSlots.length * this.bytesPerBlock);
        for (const s of g1Slots) if (this.g1.fenceUntilMs[s]! < landsAtMs) this.g1.fenceUntilMs[s] = landsAtMs;
        this.pending.push({ landsAtMs, hostSlots, runStarts });
      }
    }
    this.land(endMs);
  }

  /** Earliest pending d2h landing, or undefined. */
  nextLandingMs(): number | undefined {
    return this.pendingHead < this.pending.length ? this.pending[this.pendingHead]!.landsAtMs : undefined;
  }

  /** Prefix-cache reset (only with no block in use): G1 and G2 emptied, one `cleared` event. */
  clear(): void {
    this.g1.clear();
    if (this.host !== null) {
      this.host.clear();
      this.registry!.clear();
      this.pending.length = 0;
      this.pendingHead = 0;
    }
    this.events.cleared();
    this.eventsEmitted++;
  }

  /** Lands every d2h copy due by `nowMs`: each chain run becomes one host `stored`. */
  private land(nowMs: number): void {
    const host = this.host;
    while (this.pendingHead < this.pending.length && this.pending[this.pendingHead]!.landsAtMs <= nowMs) {
      const copy = this.pending[this.pendingHead++]!;
      const { hostSlots, runStarts } = copy;
      for (let r = 0; r < runStarts.length; r++) {
        const from = runStarts[r]!;
        const to = r + 1 < runStarts.length ? runStarts[r + 1]! : hostSlots.length;
        const hashes: bigint[] = [];
        for (let i = from; i < to; i++) hashes.push(host!.hashOf(hostSlots[i]!));
        const recs = this.registry!.storeResolved("host", hashes);
        if (recs === undefined) {
          for (let i = from; i < to; i++) host!.dropPending(hostSlots[i]!);
          this.droppedStoreCount++;
          this.droppedStores.push({ tier: "host", blockHashes: hashes, reason: "token ids of a block could not be recovered (released beyond the FIFO)" });
          continue;
        }
        const bs = this.blockSize;
        const tokenIds = new Uint32Array(hashes.length * bs);
        const locals: bigint[] = [];
        for (let i = 0; i < recs.length; i++) {
          tokenIds.set(recs[i]!.tokenIds, i * bs);
          locals.push(recs[i]!.localHash);
          host!.land(hostSlots[from + i]!);
        }
        this.events.stored("host", recs[0]!.parentHash, hashes, locals, tokenIds, bs);
        this.eventsEmitted++;
      }
    }
    if (this.pendingHead > 64 && this.pendingHead * 2 > this.pending.length) {
      this.pending.splice(0, this.pendingHead);
      this.pendingHead = 0;
    }
  }

  private ensureHashes(req: RequestState, full: number): void {
    const bs = this.blockSize;
    for (let i = req.numHashed; i < full; i++) {
      const local = this.hasher.localHash(req.tokens.subarray(i * bs, (i + 1) * bs));
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
    if (this.registry !== null) {
      for (let i = from; i < to; i++) {
        this.registry.stored("device", req.seqHashes[i]!, i > 0 ? req.seqHashes[i - 1]! : null, req.localHashes[i]!, req.tokens.subarray(i * bs, (i + 1) * bs));
      }
    }
    this.events.stored("device", parent, hashes, locals, req.tokens.subarray(from * bs, to * bs), bs);
    this.eventsEmitted++;
  }

  private emitRemoved(tier: KvTier, hash: bigint): void {
    const before = this.events.events.length;
    this.events.removed(tier, hash);
    if (this.events.events.length !== before) this.eventsEmitted++;
    this.registry?.removed(tier, hash);
  }
}

function finiteOrZero(gbps: number): number {
  return Number.isFinite(gbps) ? gbps : 0;
}
