// vLLM-like continuous batching: one token budget of max_num_batched_tokens per step,
// spent on the running requests in running order (one token per decoding request, prefill
// chunks for the rest, preempting when a block cannot be allocated), then on new admissions while
// #running < max_num_seqs. Mirrors vLLM V1's Scheduler.schedule() and Dynamo's current mocker
// core: a long prefill early in the running list can use up the budget and stall the decodes
// behind it; no admission in a step that preempted.
import { remoteTransfer, type KvTransferTiming } from "../engine/kv-transfer-time.ts";
import type { KvManager } from "../kv/kv-manager.ts";
import { LoraBatch, type LoraLimits } from "./lora-batch.ts";
import { RequestQueue } from "./request-queue.ts";
import { RequestPhase, type RequestState } from "./request-state.ts";

export const PreemptionMode = { lifo: "lifo", fifo: "fifo" } as const;
export type PreemptionMode = (typeof PreemptionMode)[keyof typeof PreemptionMode];

export interface SchedulerConfig {
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  enableChunkedPrefill: boolean;
  preemptionMode: PreemptionMode;
  /** LoRA adapters per batch and kept loaded (absent: 1 and 1, no load time). */
  lora?: LoraLimits;
}

export interface SchedulePlan {
  prefillTokens: number;
  decodingRequests: number;
}

export class Scheduler {
  readonly waiting = new RequestQueue();
  /** In admission order: LIFO preempts from the end, FIFO from the front. */
  running: RequestState[] = [];
  /** Requests given tokens in the current step, in scheduling order. */
  readonly scheduled: RequestState[] = [];
  loadingCount = 0;
  preemptions = 0;
  prefixQueryTokens = 0;
  prefixHitTokens = 0;
  prefixHostHitTokens = 0;
  private prefillTokens = 0;
  private decodingRequests = 0;
  private budget = 0;
  /** Made at the first adapter request: base-model-only engines never touch it. */
  lora: LoraBatch | undefined;

  constructor(
    private readonly cfg: SchedulerConfig,
    private readonly kv: KvManager,
    private readonly transferTiming: KvTransferTiming = { kvBytesPerToken: 0, bandwidthGbps: 0, mode: "full_prompt" },
  ) {}

  schedule(nowMs: number): SchedulePlan {
    const scheduled = this.scheduled;
    scheduled.length = 0;
    const running = this.running;
    this.budget = this.cfg.maxNumBatchedTokens;
    this.prefillTokens = 0;
    this.decodingRequests = 0;
    let preempted = false;

    for (let i = 0; i < running.length; i++) {
      const r = running[i]!;
      if (r.phase !== RequestPhase.running) continue;
      const isDecode = r.decoding;
      const n = Math.min(isDecode ? 1 : r.length - r.numComputed, this.budget);
      if (n <= 0) continue;
      let self = false;
      while (!this.kv.grow(r, r.numComputed + n)) {
        const vi = this.cfg.preemptionMode === PreemptionMode.lifo ? running.length - 1 : 0;
        const victim = running[vi]!;
        this.preemptAt(vi);
        preempted = true;
        if (victim === r) {
          self = true;
          break;
        }
        if (vi < i) i--;
      }
      if (self) {
        i--; // r left the list at index i
        continue;
      }
      this.take(r, n, isDecode);
    }

    // As vLLM's allocate_slots caches the blocks a step will compute: no preemption follows in
    // this pass, so what running requests are about to compute is cached for the admissions below.
    for (const r of scheduled) this.kv.commit(r, r.numComputed + r.scheduledTokens);
    if (!preempted) this.admit(nowMs);
    return { prefillTokens: this.prefillTokens, decodingRequests: this.decodingRequests };
  }

  /** A load ended short (a waited-for G2 copy was dropped): `lost` tokens are computed instead. */
  loadFellShort(r: RequestState, lost: number): void {
    this.prefixHitTokens -= lost;
    this.prefixHostHitTokens -= lost;
    if (r.loadReported) {
      r.cachedTokens -= lost;
      r.hostLoadedTokens -= lost;
    }
  }

  /** Removes a request from running (abort): releases its blocks. */
  dropRunning(r: RequestState): void {
    const i = this.running.indexOf(r);
    if (i === -1) return;
    this.running.splice(i, 1);
    if (r.phase === RequestPhase.loading) this.loadingCount--;
    this.kv.release(r);
  }

  private admit(nowMs: number): void {
    const { kv, cfg } = this;
    const bs = kv.blockSize;
    // Requests skipped for the LoRA budget, put back at the front in order after the pass (vLLM's skipped queue).
    let skipped: RequestState[] | undefined;
    let loraPass = false;
    while (this.waiting.size > 0 && this.running.length < cfg.maxNumSeqs && this.budget > 0) {
      const r = this.waiting.peekFront()!;
      // Arrivals queue in order, so the first not yet ready holds back the rest.
      if (r.readyAtMs > nowMs) break;
      if (r.loraName !== undefined) {
        const lora = (this.lora ??= new LoraBatch(cfg.lora ?? { maxLoras: 1, maxCpuLoras: 1, loadMs: 0 }));
        if (!loraPass) {
          lora.begin(this.running);
          loraPass = true;
        }
        if (!lora.admits(r)) {
          (skipped ??= []).push(this.waiting.popFront()!);
          lora.deferred++;
          continue;
        }
      }
      const k = kv.matchPrefix(r);
      const h = kv.hostHitCells.length;
      const localLen = kv.matchedTokens(r);
      // A remote prefill covers the prompt past this rank's own hits: only the last token is computed (vLLM's NixlConnector load).
      const remoteTokens = r.remotePrefill ? r.length - 1 - localLen : 0;
      const cachedLen = localLen + remoteTokens;
      const remaining = r.length - cachedLen;
      // A G2 load that takes time, or waits for a copy still in flight to G2, defers computing
      // until it lands (vLLM's async KV load); so does a remote pull.
      const pull = remoteTokens > 0 ? remoteTransfer(this.transferTiming, r.promptLen, remoteTokens) : undefined;
      const loadsLater = (h > 0 && (!kv.instantH2d || kv.hostReadyAtMs > nowMs)) || (pull !== undefined && pull.ms > 0);
      const n = loadsLater ? 0 : Math.min(remaining, this.budget);
      if (!cfg.enableChunkedPrefill && n < remaining && !loadsLater) break;
      if (!kv.canAdmit(r, cachedLen + n)) break;
      this.waiting.popFront();
      if (r.loraName !== undefined) this.lora!.admitted(r);
      r.loadReported = r.cachedTokens < 0;
      if (r.loadReported) {
        r.cachedTokens = cachedLen;
        r.hostLoadedTokens = localLen - k * bs;
        r.scheduledAtMs = nowMs;
      }
      // Pulled tokens are the connector's, not this rank's prefix cache (vLLM counts them apart).
      this.prefixQueryTokens += r.length;
      this.prefixHitTokens += localLen;
      this.prefixHostHitTokens += localLen - k * bs;
      r.phase = RequestPhase.running;
      this.running.push(r);
      let pullLandsAtMs = nowMs;
      r.remoteTokens = remoteTokens;
      if (pull !== undefined) {
        r.remoteBytes = pull.bytes;
        r.remoteTransferMs = pull.ms;
        pullLandsAtMs = nowMs + pull.ms;
      }
      if (!kv.admit(r, cachedLen + n, nowMs, pullLandsAtMs)) {
        this.loadingCount++;
        continue;
      }
      if (n > 0) {
        this.take(r, n, false);
        this.kv.commit(r, r.numComputed + n);
      }
    }
    if (skipped !== undefined) for (let i = skipped.length - 1; i >= 0; i--) this.waiting.pushFront(skipped[i]!);
    else if (this.lora !== undefined && !loraPass) this.lora.deferred = 0;
  }

  private take(r: RequestState, n: number, isDecode: boolean): void {
    r.scheduledTokens = n;
    this.scheduled.push(r);
    this.budget -= n;
    if (isDecode) this.decodingRequests++;
    else this.prefillTokens += n;
  }

  /** Preempts running[vi]: frees its blocks, back to the front of waiting, output kept. */
  private preemptAt(vi: number): void {
    const v = this.running[vi]!;
    if (v.scheduledTokens > 0) {
      // Already given tokens this step (FIFO victims can be): take them back.
      const si = this.scheduled.indexOf(v);
      if (si !== -1) this.scheduled.splice(si, 1);
      this.budget += v.scheduledTokens;
      if (v.decoding) this.decodingRequests--;
      else this.prefillTokens -= v.scheduledTokens;
      v.scheduledTokens = 0;
    }
    if (v.phase === RequestPhase.loading) this.loadingCount--;
    this.running.splice(vi, 1);
    this.kv.release(v);
    v.phase = RequestPhase.waiting;
    this.waiting.pushFront(v);
    this.preemptions++;
  }
}
