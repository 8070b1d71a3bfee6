// The mock engine of one (worker, DP rank): pure and synchronous. The caller owns
// time: the live mocker calls step(now) on real time and sleeps durationMs; replay advances a
// virtual clock by durationMs. Requests can be added between any two steps.
import type { BlockHasher } from "../kv/block-hash.ts";
import type { BlockRecord } from "../kv/block-token-registry.ts";
import type { KvTier } from "../kv/kv-events.ts";
import { KvManager } from "../kv/kv-manager.ts";
import { RequestPhase, RequestState } from "../scheduler/request-state.ts";
import { loraRequestCounts } from "../scheduler/lora-batch.ts";
import { Scheduler } from "../scheduler/scheduler.ts";
import { profileStepMs, profileTimerFor, stepDurationMs, type StepShape, type StepTimer, type TimingConfig } from "../timing/timing-model.ts";
import { DEFAULT_ENGINE_CONFIG, engineConfigProblems, type EngineConfig } from "./engine-config.ts";
import type { AddResult, EngineMetrics, EngineRequest, FinishedRequest, FirstToken, RemoteLoad, StepResult, TokenOut } from "./engine-types.ts";
import { outputKey, outputToken } from "./output-tokens.ts";

const NONE_FINISHED: readonly FinishedRequest[] = Object.freeze([]);

export interface EngineDeps {
  hasher: BlockHasher;
  /** Hears what the engine warns about once (a timing profile extrapolated); `key` is what the warning is about. */
  warn?: (message: string, key: string) => void;
}

export class MockEngine {
  readonly config: Readonly<EngineConfig>;
  private readonly kv: KvManager;
  private readonly sched: Scheduler;
  private readonly timing: TimingConfig;
  /** The profile model's timer, when that is the model. */
  private readonly profileTimer: StepTimer | undefined;
  /** Engine ms a request waits after arriving before it can be scheduled (a profile's per-request cost). */
  private readonly requestDelayMs: number;
  private readonly shape: StepShape = { prefillTokens: 0, prefillContextTokenProduct: 0, prefillSelfPairs: 0, decodeRequests: 0, decodeContextTokens: 0 };
  private lastNowMs = 0;
  private readonly active = new Map<string, RequestState>();
  /** Finished holdBlocks requests whose blocks wait to be pulled (releaseHeld frees them). */
  private readonly held = new Map<string, RequestState>();
  private heldBlocks = 0;
  private steps = 0;
  private lastStepMs = 0;
  private totalStepMs = 0;
  private finishedCount = 0;
  private generatedTokens = 0;

  constructor(config: Partial<EngineConfig>, private readonly deps: EngineDeps) {
    const cfg = { ...DEFAULT_ENGINE_CONFIG, ...config };
    const problems = engineConfigProblems(cfg);
    // The process edge validates configs first; reaching this is a programming error.
    if (problems.length > 0) throw new RangeError(`invalid engine config: ${problems.join("; ")}`);
    this.config = Object.freeze(cfg);
    const scale = (gbps: number) => (cfg.speedupRatio === 0 ? 0 : gbps * cfg.speedupRatio);
    this.kv = new KvManager(
      {
        blockSize: cfg.blockSize,
        numGpuBlocks: cfg.numGpuBlocks,
        numHostBlocks: cfg.numHostBlocks,
        enablePrefixCaching: cfg.enablePrefixCaching,
        // Transfers run on the same scaled clock as steps.
        d2hBandwidthGbps: scale(cfg.hostOffloadD2hBandwidthGbps),
        h2dBandwidthGbps: scale(cfg.hostOffloadH2dBandwidthGbps),
        kvBytesPerToken: cfg.kvBytesPerToken,
        releasedFifoBlocks: cfg.releasedFifoBlocks,
        offloadDecodeBlocks: cfg.hostOffloadDecodeBlocks,
      },
      deps.hasher,
    );
    // A LoRA load runs on the same scaled clock as steps.
    const loraLoadMs = cfg.speedupRatio === 0 ? 0 : cfg.loraLoadMs / cfg.speedupRatio;
    this.sched = new Scheduler({ ...cfg, lora: { maxLoras: cfg.maxLoras, maxCpuLoras: cfg.maxCpuLoras, loadMs: loraLoadMs } }, this.kv, { kvBytesPerToken: cfg.kvBytesPerToken, bandwidthGbps: scale(cfg.kvTransferBandwidthGbps), mode: cfg.kvTransferTimingMode });
    this.timing = cfg;
    this.profileTimer = profileTimerFor(cfg, deps.warn);
    const requestMs = this.profileTimer?.requestMs ?? 0;
    this.requestDelayMs = requestMs > 0 && cfg.speedupRatio > 0 ? requestMs / cfg.speedupRatio : 0;
  }

  /** The last step's shape (profile model only; overwritten by the next step). */
  get lastStepShape(): Readonly<StepShape> {
    return this.shape;
  }

  /** Queues a request; refusals (bad shape, can never fit) are returned, not thrown. */
  addRequest(req: EngineRequest): AddResult {
    const cfg = this.config;
    const promptLen = req.tokenIds.length;
    if (typeof req.id !== "string" || req.id === "") return { ok: false, reason: "request id must be a non-empty string" };
    if (this.active.has(req.id) || this.held.has(req.id)) return { ok: false, reason: `request id ${req.id} is already in flight` };
    if (promptLen < 1) return { ok: false, reason: "prompt must hold at least one token" };
    if (req.loraName !== undefined && (typeof req.loraName !== "string" || req.loraName === "")) return { ok: false, reason: "LoRA adapter name must be a non-empty string" };
    if (!Number.isInteger(req.maxTokens) || req.maxTokens < 1) return { ok: false, reason: `max tokens must be an integer ≥ 1, got ${req.maxTokens}` };
    const kvTokens = promptLen + req.maxTokens - 1; // the last generated token is never computed
    const blocksNeeded = Math.ceil(kvTokens / cfg.blockSize);
    if (blocksNeeded > cfg.numGpuBlocks) {
      return { ok: false, reason: `prompt (${promptLen}) + max tokens (${req.maxTokens}) need ${blocksNeeded} KV blocks, more than the ${cfg.numGpuBlocks} this rank has` };
    }
    if (!cfg.enableChunkedPrefill && kvTokens > cfg.maxNumBatchedTokens) {
      return { ok: false, reason: `prompt (${promptLen}) + max tokens (${req.maxTokens}) exceed max_num_batched_tokens ${cfg.maxNumBatchedTokens} with chunked prefill off` };
    }
    const pastProfile = this.profileTimer?.contextRefusal(promptLen, req.maxTokens);
    if (pastProfile !== undefined) return { ok: false, reason: pastProfile };
    const tokens = adoptOrCopy(req, promptLen);
    const fullBlocks = Math.floor(promptLen / cfg.blockSize);
    const r = new RequestState(req.id, promptLen, req.maxTokens, tokens, Math.floor((promptLen + req.maxTokens) / cfg.blockSize));
    if (req.loraName !== undefined) {
      r.loraName = req.loraName;
      r.hashSeed = this.deps.hasher.seedOf(req.loraName);
    }
    if (fullBlocks > 0) {
      const hashes = req.promptHashes ?? this.deps.hasher.hashBlocks(tokens.subarray(0, fullBlocks * cfg.blockSize), cfg.blockSize, undefined, r.hashSeed);
      if (hashes.sequence.length !== fullBlocks || hashes.local.length !== fullBlocks) {
        return { ok: false, reason: `promptHashes hold ${hashes.sequence.length} blocks, expected ${fullBlocks} at block size ${cfg.blockSize}` };
      }
      r.seqHashes.set(hashes.sequence);
      r.localHashes.set(hashes.local);
      r.numHashed = fullBlocks;
    }
    r.outputKey = outputKey(cfg.seed, tokens, promptLen, cfg.blockSize, fullBlocks > 0 ? r.seqHashes[fullBlocks - 1] : undefined);
    r.holdBlocks = req.holdBlocks === true;
    r.remotePrefill = req.remotePrefill === true;
    if (this.requestDelayMs > 0) r.readyAtMs = (req.arrivalMs ?? this.lastNowMs) + this.requestDelayMs;
    this.active.set(req.id, r);
    this.sched.waiting.pushBack(r);
    return { ok: true };
  }

  /** Drops an unfinished request (client gone); its blocks stay cached. False if unknown. */
  abortRequest(id: string): boolean {
    const r = this.active.get(id);
    if (r === undefined) return false;
    this.active.delete(id);
    if (r.phase === RequestPhase.waiting) this.sched.waiting.remove(r);
    else this.sched.dropRunning(r);
    r.phase = RequestPhase.finished;
    return true;
  }

  /** Runs one engine step starting at `nowMs`. */
  step(nowMs: number): StepResult {
    const kv = this.kv;
    const sched = this.sched;
    this.lastNowMs = nowMs;
    kv.beginStep(nowMs);
    if (sched.loadingCount > 0) this.landLoads(nowMs);
    const plan = sched.schedule(nowMs);
    const remoteLoads = kv.remoteLanded.length > 0 ? this.takeRemoteLoads() : undefined;
    const scheduled = sched.scheduled;
    const tokens: TokenOut[] = [];
    let firstTokens: FirstToken[] | undefined;
    let finished: readonly FinishedRequest[] = NONE_FINISHED;
    let durationMs = 0;
    if (scheduled.length > 0) {
      const fenceWaitMs = kv.fenceMaxMs > nowMs ? kv.fenceMaxMs - nowMs : 0;
      const load = kv.g1.activeBlocks / kv.g1.capacity;
      const vocab = this.config.vocabSize;
      let anyFinished = false;
      const timer = this.profileTimer;
      const shape = this.shape;
      if (timer !== undefined) shape.prefillTokens = shape.prefillContextTokenProduct = shape.prefillSelfPairs = shape.decodeRequests = shape.decodeContextTokens = 0;
      for (let i = 0; i < scheduled.length; i++) {
        const r = scheduled[i]!;
        if (timer !== undefined) {
          if (r.decoding) {
            shape.decodeRequests++;
            shape.decodeContextTokens += r.numComputed + 1;
          } else {
            shape.prefillTokens += r.scheduledTokens;
            shape.prefillContextTokenProduct += r.numComputed * r.scheduledTokens;
            shape.prefillSelfPairs += (r.scheduledTokens * (r.scheduledTokens + 1)) / 2;
          }
        }
        // Its blocks were cached as the scheduler gave it these tokens (vLLM's allocate_slots).
        r.numComputed += r.scheduledTokens;
        r.scheduledTokens = 0;
        const len = r.promptLen + r.numOutput;
        if (r.numComputed !== len) continue; // a prefill chunk short of the end samples nothing
        const tokenId = this.config.firstOutputId + outputToken(r.outputKey, r.numOutput, vocab);
        r.tokens[len] = tokenId;
        r.numOutput++;
        tokens.push({ requestId: r.id, tokenId });
        if (r.numOutput === 1) (firstTokens ??= []).push({ requestId: r.id, promptTokens: r.promptLen, cachedTokens: Math.max(r.cachedTokens, 0), hostLoadedTokens: r.hostLoadedTokens, remoteLoadedTokens: r.remoteLoadedTokens, scheduledAtMs: r.scheduledAtMs });
        if (r.numOutput === r.maxTokens) {
          r.phase = RequestPhase.finished;
          anyFinished = true;
        }
      }
      // Any sampled token, a prefill's first one included, makes the step pay decode (as Dynamo's mocker).
      const stepMs = timer !== undefined ? profileStepMs(this.timing, timer, shape) : stepDurationMs(this.timing, plan.prefillTokens, tokens.length, load);
      durationMs = fenceWaitMs + stepMs + (sched.lora?.takeLoadMs() ?? 0);
      this.generatedTokens += tokens.length;
      if (kv.host !== null) for (let i = 0; i < scheduled.length; i++) kv.queueOffload(scheduled[i]!);
      if (anyFinished) finished = this.retireFinished();
      this.steps++;
      this.lastStepMs = durationMs;
      this.totalStepMs += durationMs;
    }
    kv.flushOffload(nowMs + durationMs);
    const result: StepResult = { durationMs, scheduledRequests: scheduled.length, events: kv.events.take(), tokens, finished };
    if (firstTokens) result.firstTokens = firstTokens;
    if (remoteLoads) result.remoteLoads = remoteLoads;
    const off = kv.offload;
    if (off !== null && off.droppedStores.length > 0) {
      result.dropped = off.droppedStores;
      off.droppedStores = [];
    }
    if (off !== null && (off.d2h.ops.length > 0 || off.h2d.ops.length > 0)) {
      result.transfers = { d2h: off.d2h.ops, h2d: off.h2d.ops };
      off.d2h.ops = [];
      off.h2d.ops = [];
    }
    return result;
  }

  /** Prefix-cache reset (vLLM reset_prefix_cache): only when no request holds blocks; G1 only. */
  resetPrefixCache(): StepResult | undefined {
    if (this.sched.running.length > 0 || this.held.size > 0) return undefined;
    this.kv.clear();
    return { durationMs: 0, scheduledRequests: 0, events: this.kv.events.take(), tokens: [], finished: [] };
  }

  /**
   * Frees a finished holdBlocks request's blocks (pulled, or held past the timeout): they stay in
   * the prefix cache, unreferenced, as any finished request's. False if not held.
   */
  releaseHeld(id: string): boolean {
    const r = this.held.get(id);
    if (r === undefined) return false;
    this.held.delete(id);
    this.heldBlocks -= r.blocks.length;
    this.kv.release(r);
    return true;
  }

  /**
   * Leading prompt blocks this rank caches in G1 now (at most length − 1 tokens, as admission
   * counts hits): what a decode rank need not pull. Admission matches again later.
   */
  localPrefixBlocks(tokenIds: ArrayLike<number>, loraName?: string): number {
    const bs = this.config.blockSize;
    const full = Math.floor((tokenIds.length - 1) / bs);
    if (full <= 0 || !this.config.enablePrefixCaching) return 0;
    const tokens = Array.from({ length: full * bs }, (_, i) => tokenIds[i]!);
    // An adapter's blocks are hashed under its seed, as addRequest hashes them.
    const seq = this.deps.hasher.sequenceHashes(tokens, bs, undefined, this.deps.hasher.seedOf(loraName));
    const words = new Uint32Array(seq.buffer, seq.byteOffset, full * 2);
    let k = 0;
    while (k < full && this.kv.g1.lookup(words[2 * k]!, words[2 * k + 1]!) !== -1) k++;
    return k;
  }

  /** Requests waiting or running. */
  get pendingRequests(): number {
    return this.active.size;
  }

  /** True when a step now would do nothing: no request can compute and no copy is due. */
  get idle(): boolean {
    return this.active.size === 0 || (this.sched.waiting.size === 0 && this.sched.running.length === this.sched.loadingCount);
  }

  /** Earliest time a pending transfer lands (a loading request resumes, a host store appears) or a waiting request becomes ready. */
  nextWakeMs(): number | undefined {
    let t = this.kv.nextLandingMs();
    const ready = this.sched.waiting.peekFront()?.readyAtMs ?? 0;
    if (ready > this.lastNowMs && (t === undefined || ready < t)) t = ready;
    if (this.sched.loadingCount > 0) {
      for (const r of this.sched.running) {
        if (r.phase === RequestPhase.loading && (t === undefined || r.loadUntilMs < t)) t = r.loadUntilMs;
      }
    }
    return t;
  }

  metrics(): EngineMetrics {
    const kv = this.kv;
    const s = this.sched;
    const host = kv.host;
    return {
      waitingRequests: s.waiting.size,
      runningRequests: s.running.length,
      loadingRequests: s.loadingCount,
      loraDeferredRequests: s.lora?.deferred ?? 0,
      activeBlocks: kv.g1.activeBlocks,
      gpuBlocks: kv.g1.capacity,
      gpuCacheUsage: kv.g1.activeBlocks / kv.g1.capacity,
      gpuCachedBlocks: kv.g1.cachedBlocks,
      hostBlocks: host?.capacity ?? 0,
      hostUsedBlocks: host?.usedBlocks ?? 0,
      hostResidentBlocks: host?.residentBlocks ?? 0,
      hostCacheUsage: host ? host.usedBlocks / host.capacity : 0,
      prefixQueryTokens: s.prefixQueryTokens,
      prefixHitTokens: s.prefixHitTokens,
      prefixHostHitTokens: s.prefixHostHitTokens,
      prefixHitRate: s.prefixQueryTokens > 0 ? s.prefixHitTokens / s.prefixQueryTokens : 0,
      preemptions: s.preemptions,
      eventsEmitted: kv.events.emitted,
      eventsDropped: kv.offload?.droppedStoreCount ?? 0,
      hostOffloadSkippedBlocks: kv.offload?.skippedBlocks ?? 0,
      hostBlocksStored: kv.offload?.storedBlocks ?? 0,
      steps: this.steps,
      lastStepMs: this.lastStepMs,
      totalStepMs: this.totalStepMs,
      finishedRequests: this.finishedCount,
      generatedTokens: this.generatedTokens,
      heldRequests: this.held.size,
      heldBlocks: this.heldBlocks,
    };
  }

  /** Per LoRA adapter, the requests running and waiting, and the adapters loaded (least recently used first). */
  loraState(): { running: Map<string, number>; waiting: Map<string, number>; loaded: string[] } {
    if (this.sched.lora === undefined) return { running: new Map(), waiting: new Map(), loaded: [] };
    return { ...loraRequestCounts(this.sched.running, this.sched.waiting.toArray()), loaded: this.sched.lora.loadedAdapters() };
  }

  /** Resident sequence hashes per tier and refcounts: for invariant tests and debugging. */
  inspect(): { resident: Record<KvTier, bigint[]>; refcounts: Int32Array; hostUsedBlocks: number; hostPinnedBlocks: number; running: string[]; loading: string[]; waiting: string[] } {
    return {
      resident: { device: this.kv.g1.residentHashes(), host: this.kv.host?.residentHashes() ?? [] },
      refcounts: this.kv.g1.refcount.slice(),
      hostUsedBlocks: this.kv.host?.usedBlocks ?? 0,
      hostPinnedBlocks: this.kv.host?.pinnedBlocks ?? 0,
      running: this.sched.running.map((r) => r.id),
      loading: this.sched.running.filter((r) => r.phase === RequestPhase.loading).map((r) => r.id),
      waiting: this.sched.waiting.toArray().map((r) => r.id),
    };
  }

  /**
   * A block's parent, local hash and token ids while the host tier's token registry knows it
   * (resident in a tier, or recently released); undefined without a host tier. For state dumps.
   */
  blockRecord(hash: bigint): BlockRecord | undefined {
    return this.kv.offload?.registry.resolve([hash])?.[0];
  }

  private takeRemoteLoads(): RemoteLoad[] {
    const out: RemoteLoad[] = [];
    for (const r of this.kv.remoteLanded) {
      if (r.loadReported) r.remoteLoadedTokens = r.remoteTokens;
      out.push({ requestId: r.id, tokens: r.remoteTokens, bytes: r.remoteBytes, transferMs: r.remoteTransferMs });
    }
    this.kv.remoteLanded.length = 0;
    return out;
  }

  private landLoads(nowMs: number): void {
    for (const r of this.sched.running) {
      if (r.phase === RequestPhase.loading && r.loadUntilMs <= nowMs) {
        const lost = this.kv.finishLoad(r);
        if (lost > 0) this.sched.loadFellShort(r, lost);
        this.sched.loadingCount--;
      }
    }
  }

  private retireFinished(): FinishedRequest[] {
    const out: FinishedRequest[] = [];
    const kept: RequestState[] = [];
    for (const r of this.sched.running) {
      if (r.phase !== RequestPhase.finished) {
        kept.push(r);
        continue;
      }
      this.active.delete(r.id);
      this.finishedCount++;
      const f: FinishedRequest = { requestId: r.id, promptTokens: r.promptLen, cachedTokens: r.cachedTokens, hostLoadedTokens: r.hostLoadedTokens, completionTokens: r.numOutput };
      if (r.remoteLoadedTokens > 0) f.remoteLoadedTokens = r.remoteLoadedTokens;
      if (r.holdBlocks) {
        // NixlConnector's delayed free: the blocks stay referenced until pulled or timed out.
        f.heldBlockIds = r.blocks.slice();
        this.held.set(r.id, r);
        this.heldBlocks += r.blocks.length;
      } else this.kv.release(r);
      out.push(f);
    }
    this.sched.running = kept;
    return out;
  }
}

function adoptOrCopy(req: EngineRequest, promptLen: number): Uint32Array {
  const src = req.tokenIds;
  const total = promptLen + req.maxTokens;
  if (req.adoptTokens && src instanceof Uint32Array && src.byteOffset / 4 + total <= src.buffer.byteLength / 4) {
    return new Uint32Array(src.buffer, src.byteOffset, total);
  }
  // On its own ArrayBuffer: the prompt's hashing takes a subarray of it, which would otherwise move
  // a small typed array out of the collector's heap (an allocation and a copy) first.
  const tokens = new Uint32Array(new ArrayBuffer(4 * total));
  if (src instanceof Uint32Array) tokens.set(src);
  else for (let i = 0; i < promptLen; i++) tokens[i] = src[i]!;
  return tokens;
}

/** Creates an engine; `config` overrides DEFAULT_ENGINE_CONFIG (engine-config.ts). */
export function createEngine(config: Partial<EngineConfig>, deps: EngineDeps): MockEngine {
  return new MockEngine(config, deps);
}
