// The G2 side of one rank: which completed G1 blocks get copied to the host tier, the
// FIFO device-to-host and host-to-device lanes, landing copies as host `stored` events with
// token ids recovered from the registry (a store that cannot be resolved is dropped whole), and
// host LRU evictions as host `removed` events.
import { BlockTokenRegistry } from "./block-token-registry.ts";
import { HostTier } from "./host-tier.ts";
import type { KvEventBuffer, KvTier } from "./kv-events.ts";
import { TransferLane } from "./transfer-lane.ts";

/** A host store the engine refused because a block's token ids could not be recovered. */
export interface DroppedStore {
  readonly tier: KvTier;
  readonly blockHashes: readonly bigint[];
  readonly reason: string;
}

export interface HostOffloadConfig {
  numHostBlocks: number;
  blockSize: number;
  bytesPerBlock: number;
  /** GB/s on the engine's clock; 0 = instant. */
  d2hBandwidthGbps: number;
  h2dBandwidthGbps: number;
  releasedFifoBlocks: number;
}

interface PendingCopy {
  landsAtMs: number;
  hostCells: number[];
  /** Index into hostCells where each chain run (one future `stored` event) starts. */
  runStarts: number[];
}

export class HostOffload {
  readonly tier: HostTier;
  readonly registry: BlockTokenRegistry;
  readonly instantH2d: boolean;
  readonly d2h: TransferLane;
  readonly h2d: TransferLane;
  private readonly pending: PendingCopy[] = [];
  private pendingHead = 0;
  // Candidates of the current step: sequence hash, the G1 cell it copies from, starts-a-new-run flag.
  private readonly candHashes: bigint[] = [];
  private readonly candCells: number[] = [];
  private readonly candRunStart: boolean[] = [];
  private readonly evicted: bigint[] = [];
  droppedStores: DroppedStore[] = [];
  droppedStoreCount = 0;
  skippedBlocks = 0;
  /** G2 blocks whose copy landed (host `stored` blocks) since creation: G2 traffic. */
  storedBlocks = 0;

  constructor(
    private readonly cfg: HostOffloadConfig,
    private readonly events: KvEventBuffer,
  ) {
    this.tier = new HostTier(cfg.numHostBlocks);
    this.registry = new BlockTokenRegistry(cfg.releasedFifoBlocks);
    this.d2h = new TransferLane(cfg.d2hBandwidthGbps);
    this.h2d = new TransferLane(cfg.h2dBandwidthGbps);
    this.instantH2d = !(cfg.h2dBandwidthGbps > 0);
  }

  /**
   * Considers a completed G1 block for this step's copy; false when G2 already has it.
   * `newRun` = its parent is not the previous candidate (a new `stored` event starts).
   */
  candidate(hash: bigint, g1Cell: number, newRun: boolean): boolean {
    if (this.tier.has(hash)) return false;
    this.candHashes.push(hash);
    this.candCells.push(g1Cell);
    this.candRunStart.push(newRun);
    return true;
  }

  /**
   * Once per step: reserves G2 cells for the candidates still missing (evicting LRU entries),
   * sends them through the d2h lane from `endMs`, fences the G1 cells they copy from until they land,
   * then lands everything due by `endMs`.
   */
  flush(endMs: number, fenceUntilMs: Float64Array): void {
    const n = this.candHashes.length;
    if (n > 0) {
      const hostCells: number[] = [];
      const runStarts: number[] = [];
      const fromCells: number[] = [];
      let broken = true;
      for (let i = 0; i < n; i++) {
        const hash = this.candHashes[i]!;
        if (this.tier.has(hash)) {
          broken = true; // queued twice in one step (shared prefix): the first copy serves both
          continue;
        }
        const cell = this.tier.reserve(hash, this.evicted);
        for (const h of this.evicted) this.removed(h);
        this.evicted.length = 0;
        if (cell === -1) {
          this.skippedBlocks++;
          broken = true;
          continue;
        }
        if (broken || this.candRunStart[i]) runStarts.push(hostCells.length);
        broken = false;
        hostCells.push(cell);
        fromCells.push(this.candCells[i]!);
      }
      this.candHashes.length = 0;
      this.candCells.length = 0;
      this.candRunStart.length = 0;
      if (hostCells.length > 0) {
        const landsAtMs = this.d2h.submit(endMs, hostCells.length * this.cfg.bytesPerBlock);
        for (const s of fromCells) if (fenceUntilMs[s]! < landsAtMs) fenceUntilMs[s] = landsAtMs;
        for (const hs of hostCells) this.tier.setPendingLandsAt(hs, landsAtMs);
        this.pending.push({ landsAtMs, hostCells, runStarts });
      }
    }
    this.land(endMs);
  }

  /** Queues a load of `blocks` host blocks not before `notBeforeMs`; returns when it lands. */
  load(notBeforeMs: number, blocks: number): number {
    return this.h2d.submit(notBeforeMs, blocks * this.cfg.bytesPerBlock);
  }

  /** Lands every d2h copy due by `nowMs`: each chain run becomes one host `stored`. */
  land(nowMs: number): void {
    const tier = this.tier;
    while (this.pendingHead < this.pending.length && this.pending[this.pendingHead]!.landsAtMs <= nowMs) {
      const { hostCells, runStarts } = this.pending[this.pendingHead++]!;
      for (let r = 0; r < runStarts.length; r++) {
        const from = runStarts[r]!;
        const to = r + 1 < runStarts.length ? runStarts[r + 1]! : hostCells.length;
        const hashes: bigint[] = [];
        for (let i = from; i < to; i++) hashes.push(tier.hashOf(hostCells[i]!));
        // All blocks resolve before any residency changes: a store is dropped whole or kept whole.
        const recs = this.registry.storeResolvedCells("host", hashes);
        if (recs === undefined) {
          for (let i = from; i < to; i++) tier.dropPending(hostCells[i]!);
          this.droppedStoreCount++;
          this.droppedStores.push({ tier: "host", blockHashes: hashes, reason: "token ids of a block could not be recovered (released beyond the FIFO)" });
          continue;
        }
        const bs = this.cfg.blockSize;
        const tokenIds = new Uint32Array(hashes.length * bs);
        const locals: bigint[] = [];
        for (let i = 0; i < recs.length; i++) {
          this.registry.copyTokens(recs[i]!, tokenIds, i * bs);
          locals.push(this.registry.localOf(recs[i]!));
          tier.land(hostCells[from + i]!);
        }
        this.storedBlocks += recs.length;
        // A run is one parent chain, so one adapter (an adapter seeds every hash of its blocks).
        this.events.stored("host", this.registry.parentOf(recs[0]!), hashes, locals, tokenIds, bs, this.registry.adapterOf(recs[0]!));
      }
    }
    if (this.pendingHead > 64 && this.pendingHead * 2 > this.pending.length) {
      this.pending.splice(0, this.pendingHead);
      this.pendingHead = 0;
    }
  }

  /** Earliest pending d2h landing, or undefined. */
  nextLandingMs(): number | undefined {
    return this.pendingHead < this.pending.length ? this.pending[this.pendingHead]!.landsAtMs : undefined;
  }

  private removed(hash: bigint): void {
    this.events.removed("host", hash);
    this.registry.removed("host", hash);
  }
}
