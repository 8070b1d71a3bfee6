// The frontend's view of the fleet: worker records → candidates per (worker, dp rank), one Router
// per model, the KvIndex fed by router events and agent snapshots, CacheOwner → (worker, rank), and
// each request's plan (candidate, decision, router hint). No sockets here: feeds and HTTP call in.
import type { BlockHasher } from "../../core/kv/block-hash.ts";
import { KvIndex } from "../../core/index/kv-index.ts";
import { RouterEventFeed } from "./router-event-feed.ts";
import type { Rng } from "../../core/random/rng.ts";
import { OVERLOADED, type RouterOptions } from "../../core/routing/router-options.ts";
import { Router } from "../../core/routing/router.ts";
import type { Logger } from "../../lib/logger.ts";
import type { AgentSnapshot } from "../../protocol/agent-snapshot.ts";
import type { RouterEvent, RouterEventHolder } from "../../protocol/router-events.ts";
import type { WorkerRecord } from "../../protocol/records.ts";
import { HeldRequests, type WhenGone } from "./held-requests.ts";
import { LoraHolders } from "./lora-holders.ts";
import { WorkerHealth } from "./worker-health.ts";
import { kvHintFor, ROUTER_HINT } from "./kv-hint.ts";
import type { LegQuery, RequestLifecycle, RouteFailure, RoutePlan, WorkerEntry } from "./route-plan.ts";

export interface RoutingStateOptions {
  router: Omit<RouterOptions, "mode"> & { mode: RouterOptions["mode"] };
  /** Refuse workers with another block size; undefined = the first worker's block size. */
  blockSize?: number;
  hasher: BlockHasher;
  rng: Rng;
  logger: Logger;
  now: () => number;
  /** Makes hint message ids unique across frontends (default "hint"). */
  idPrefix?: string;
  /** Status of a request shed because every worker is busy (default 529, as Dynamo). */
  overloadStatus?: number;
  /** Failed requests in a row that eject a worker from routing (default 3; worker-health.ts). */
  ejectAfter?: number;
}

const TIERS = ["device", "host", "disk"] as const;

/** One (CacheOwner, worker, rank) of an agent snapshot, with its blocks per tier. */
export type AgentSnapshotHolder = AgentSnapshot["sources"][number];

export class RoutingState {
  readonly index = new KvIndex();
  blockSize: number | undefined;
  /** Router events whose holder maps to no known (worker, rank) or CacheOwner: dropped. */
  unmappedEvents = 0;
  private readonly feed = new RouterEventFeed(this.index, (holder) => this.resolve(holder));
  private readonly workers = new Map<string, WorkerEntry>();
  private readonly routers = new Map<string, Router>();
  /** Per model, the router of its prefill workers (disaggregated serving); never serves a whole request. */
  private readonly prefillRouters = new Map<string, Router>();
  /** Rank id per worker id, then per rank: looked up for every router event, so no key string is built. */
  private readonly rankIdsByWorker = new Map<string, Map<number, number>>();
  private readonly byRankId = new Map<number, { worker: WorkerEntry; rank: number }>();
  private readonly owners = new Map<string, { workerId: string; rank: number }>();
  private nextRankId = 0;
  private hintWorkers = 0;
  private hintSeq = 0;
  private readonly refusedLogged = new Set<string>();
  /** Requests held while every worker of their model is saturated (the router's queue threshold), oldest first. */
  private readonly held = new HeldRequests<RoutePlan | RouteFailure>(() => ({ status: 499, message: "the client went away while its request was held", code: "client_closed" }));
  /** Failure streaks and ejections; an ejected worker's ranks are out of its router until a probe brings it back. */
  readonly health: WorkerHealth;
  /** Per model, its workers' advertised max_model_len → how many advertise it (the smallest one applies). */
  private readonly contextLens = new Map<string, Map<number, number>>();
  /** Set by router replica sync: told of every routed request's lifecycle. */
  lifecycle: RequestLifecycle | undefined;
  /** LoRA adapters the workers' records list: served as models of their own, under their base model. */
  readonly lora = new LoraHolders();

  constructor(private readonly opts: RoutingStateOptions) {
    this.blockSize = opts.blockSize;
    this.health = new WorkerHealth(opts.ejectAfter ?? 3);
  }

  get workerCount(): number {
    return this.workers.size;
  }

  worker(id: string): WorkerEntry | undefined {
    return this.workers.get(id);
  }

  workerList(): WorkerEntry[] {
    return [...this.workers.values()];
  }

  /** Models some worker serves (ejected workers count: they are expected back). */
  models(): string[] {
    const out = new Set<string>();
    for (const [m, r] of this.routers) if (r.size > 0) out.add(m);
    if (this.health.ejectedCount > 0) for (const w of this.workers.values()) out.add(w.record.model);
    // An adapter only prefill workers hold cannot serve a request: not a model here.
    for (const [adapter, base] of this.lora.adapters()) if (out.has(base) && this.poolHolds(adapter, undefined, false)) out.add(adapter);
    return [...out];
  }

  /** The model whose routers serve `model`: its base model for a LoRA adapter, else itself. */
  servedModel = (model: string): string => (this.routers.has(model) || this.prefillRouters.has(model) ? model : (this.lora.baseOf(model) ?? model));
  isAdapter = (model: string): boolean => this.servedModel(model) !== model;
  /** Whether some worker of the pool (routable ones only when `routable`) holds the adapter. */
  poolHolds(adapter: string, pool: "prefill" | undefined, routable = true): boolean {
    for (const id of this.lora.holdersOf(adapter)) if (this.inPool(id, pool, routable)) return true;
    return false;
  }
  private inPool(workerId: string, pool: "prefill" | undefined, routable: boolean): boolean {
    const w = this.workers.get(workerId);
    return w !== undefined && !(routable && this.health.isEjected(workerId)) && (w.record.disaggregation_mode === "prefill") === (pool === "prefill");
  }

  /** A LoRA adapter's base model (vLLM's model card `parent`); undefined for a base model or an unknown name. */
  readonly parentOf = (model: string): string | undefined => (this.routers.has(model) ? undefined : this.lora.baseOf(model));

  /** The model's context length: the smallest max_model_len its workers advertise (undefined when none does). */
  maxModelLen(model: string): number | undefined {
    const lens = this.contextLens.get(model) ?? (this.lora.size > 0 ? this.contextLens.get(this.lora.baseOf(model) ?? "") : undefined);
    if (lens === undefined) return undefined;
    let min: number | undefined;
    for (const len of lens.keys()) if (min === undefined || len < min) min = len;
    return min;
  }

  /** Every model that has had a router (kept after its workers leave: its counters stay). */
  modelNames(): string[] {
    return [...this.routers.keys()];
  }

  routerOf(model: string, pool?: "prefill"): Router | undefined {
    return (pool === "prefill" ? this.prefillRouters : this.routers).get(model);
  }
  /** A worker's pool: prefill workers are routed apart (overlap and prefill only, no active blocks), as Dynamo's prefill router. */
  private poolOf(record: WorkerRecord): Map<string, Router> {
    return record.disaggregation_mode === "prefill" ? this.prefillRouters : this.routers;
  }

  /** The rank id of (worker, rank), made on first sight (events may precede the record). */
  rankIdOf(workerId: string, rank: number): number {
    let ranks = this.rankIdsByWorker.get(workerId);
    if (!ranks) this.rankIdsByWorker.set(workerId, (ranks = new Map()));
    let id = ranks.get(rank);
    if (id === undefined) ranks.set(rank, (id = this.nextRankId++));
    return id;
  }

  /** A worker record appeared or changed. Returns a refusal reason, or undefined when routed. */
  putWorker(record: WorkerRecord): string | undefined {
    const id = record.worker_id;
    const bs = this.blockSize;
    if (bs !== undefined && record.block_size !== bs) {
      const why = `worker ${id} has block size ${record.block_size}, this frontend routes block size ${bs} (--kv-cache-block-size): not routed`;
      if (!this.refusedLogged.has(id)) this.opts.logger.warn(why);
      this.refusedLogged.add(id);
      this.removeWorker(id);
      return why;
    }
    this.blockSize ??= record.block_size;
    const old = this.workers.get(id);
    if (old && (old.record.model !== record.model || old.record.disaggregation_mode !== record.disaggregation_mode)) this.removeWorker(id);
    else if (old && old.record.data_parallel_size > record.data_parallel_size) this.removeWorker(id);
    const prev = this.workers.get(id);
    const rankIds = Array.from({ length: record.data_parallel_size }, (_, r) => this.rankIdOf(id, r));
    const entry: WorkerEntry = { id, record, rankIds, inflight: prev?.inflight ?? new Set() };
    if (prev) this.countContextLen(prev.record, -1);
    this.countContextLen(record, 1);
    if (prev && prev.record.capabilities.includes(ROUTER_HINT)) this.hintWorkers--;
    if (record.capabilities.includes(ROUTER_HINT)) this.hintWorkers++;
    this.workers.set(id, entry);
    this.lora.put(record);
    const pool = this.poolOf(record);
    let router = pool.get(record.model);
    if (!router) pool.set(record.model, (router = new Router(pool === this.routers ? this.opts.router : { ...this.opts.router, trackActiveBlocks: false }, this.opts.rng, this.index)));
    const ejected = this.health.isEjected(id);
    rankIds.forEach((s, r) => {
      this.byRankId.set(s, { worker: entry, rank: r });
      if (!ejected) router.add(s, { capacityBlocks: record.total_gpu_blocks, worker: rankIds[0]!, maxNumBatchedTokens: record.max_num_batched_tokens });
    });
    (record.cache_owner_ids ?? []).forEach((owner, r) => this.owners.set(owner, { workerId: id, rank: r }));
    if (!prev) this.opts.logger.info(`worker ${id} (${record.model}, ${record.data_parallel_size} rank(s), ${record.kv_event_source_mode}) joined routing`);
    this.release(record.model);
    return undefined;
  }

  /** A worker vanished: out of routing and the index at once; its in-flight requests are aborted. */
  removeWorker(id: string): WorkerEntry | undefined {
    const entry = this.workers.get(id);
    if (!entry) return undefined;
    this.workers.delete(id);
    this.lora.remove(id);
    this.health.forget(id);
    this.countContextLen(entry.record, -1);
    if (entry.record.capabilities.includes(ROUTER_HINT)) this.hintWorkers--;
    const router = this.poolOf(entry.record).get(entry.record.model);
    entry.rankIds.forEach((s, r) => {
      router?.remove(s);
      this.index.removeRank(s);
      this.byRankId.delete(s);
      this.rankIdsByWorker.get(id)?.delete(r);
    });
    if (this.rankIdsByWorker.get(id)?.size === 0) this.rankIdsByWorker.delete(id);
    for (const owner of entry.record.cache_owner_ids ?? []) if (this.owners.get(owner)?.workerId === id) this.owners.delete(owner);
    for (const c of entry.inflight) c.abort(new WorkerGone(id));
    this.opts.logger.info(`worker ${id} left routing${entry.inflight.size > 0 ? `; ${entry.inflight.size} in-flight request(s) fail` : ""}`);
    return entry;
  }

  /** CacheOwner → (worker, rank), from the agent's attachment records or its snapshot. */
  mapOwner(owner: string, workerId: string, rank: number): void {
    this.owners.set(owner, { workerId, rank });
  }

  /** The rank id of a router event's holder; undefined when it maps to nothing known. */
  resolve(holder: RouterEventHolder): number | undefined {
    if ("cacheOwnerId" in holder) {
      const o = this.owners.get(holder.cacheOwnerId);
      return o === undefined ? undefined : this.rankIdOf(o.workerId, o.rank);
    }
    return this.rankIdOf(holder.workerId, holder.dpRank);
  }

  apply(events: readonly RouterEvent[]): void {
    this.unmappedEvents += this.feed.apply(events);
  }

  /** Drops one rank's residency, every tier. */
  clearRank(rankId: number): void {
    this.index.removeRank(rankId);
  }

  /** Drops the residency of every rank of a known worker (its relay restarted). */
  clearWorker(workerId: string): void {
    for (const s of this.workers.get(workerId)?.rankIds ?? []) this.index.removeRank(s);
  }

  /**
   * One holder of an agent snapshot: maps its CacheOwner to (worker, rank) and stores its blocks
   * per tier. Returns the rank id it filled.
   */
  applySnapshotHolder(src: AgentSnapshotHolder): number {
    this.mapOwner(src.cache_owner_id, src.worker_id, src.dp_rank);
    const id = this.rankIdOf(src.worker_id, src.dp_rank);
    for (const tier of TIERS) {
      const blocks = src.tiers[tier];
      if (blocks.length > 0) this.index.apply(id, { kind: "stored", tier, blockHashes: blocks.map((b) => BigInt(b.seq_hash)) });
    }
    return id;
  }

  /**
   * Picks (worker, rank) for a prompt and counts it as that candidate's load until finish().
   * `exclude` names workers this request already failed on (a retry or migration goes elsewhere).
   */
  route(model: string, tokens: ArrayLike<number>, exclude?: ReadonlySet<string>, leg?: LegQuery): RoutePlan | RouteFailure {
    if (this.workers.size === 0) return { status: 503, message: "no workers are registered; start a mocker (or wait for its discovery record)", code: "no_workers" };
    // A model no router serves may be a LoRA adapter: its base model's routers, narrowed to its holders.
    const served = this.servedModel(model);
    const loraName = served === model ? undefined : model;
    if (leg?.pool === "prefill" && (this.prefillRouters.get(served)?.size ?? 0) === 0) return { status: 503, message: `no prefill worker of model ${model} is left`, code: "no_workers" };
    const router = this.routerOf(served, leg?.pool);
    if (!router || router.size === 0 || (loraName !== undefined && leg?.pool === undefined && !this.poolHolds(loraName, undefined, false))) {
      if (this.health.ejectedCount > 0 && this.models().includes(model)) return { status: 503, message: `every worker of model ${model} is out of routing after failures; each returns once its /health answers`, code: "no_workers" };
      return { status: 404, message: `The model \`${model}\` does not exist. Models served: ${this.models().join(", ") || "(none)"}`, code: "model_not_found" };
    }
    const t0 = this.opts.now();
    const bs = this.blockSize!;
    const seq = loraName === undefined ? this.opts.hasher.sequenceHashes(tokens, bs) : this.opts.hasher.sequenceHashes(tokens, bs, undefined, this.opts.hasher.seedOf(loraName));
    // The LoRA filter looks at the leg's own pool: a holder in the other pool cannot take this leg.
    const excluded = loraName !== undefined ? this.lora.exclusions(loraName, this.workers.values(), (id) => this.inPool(id, leg?.pool, true), exclude) : exclude === undefined ? undefined : this.rankIdsOf(exclude);
    const decision = router.route({ seqHashes: seq, promptTokens: tokens.length, blockSize: bs, nowMs: t0, exclude: excluded, overlapCredit: leg?.overlapCredit, trackPrefillTokens: leg?.trackPrefillTokens });
    if (decision === undefined) return { status: 503, message: `no other worker of model ${model} is left to try`, code: "no_workers" };
    if (decision === OVERLOADED) return { status: this.opts.overloadStatus ?? 529, message: OVERLOADED_MESSAGE, code: "overloaded" };
    const at = this.byRankId.get(decision.rankId)!;
    const plan: RoutePlan = { worker: at.worker, dpRank: at.rank, rankId: decision.rankId, decision, promptTokens: tokens.length, decisionMs: 0 };
    if (loraName !== undefined) plan.loraName = loraName;
    if (this.hintWorkers > 0 && leg?.pool !== "prefill") {
      plan.kvHint = kvHintFor({
        router,
        index: this.index,
        chosen: { rankId: plan.rankId, record: plan.worker.record, overlapBlocks: decision.deviceOverlap + decision.hostOverlap },
        seq,
        at: (s) => this.byRankId.get(s)!,
        nextId: () => `${this.opts.idPrefix ?? "hint"}-${++this.hintSeq}`,
      });
    }
    plan.decisionMs = this.opts.now() - t0;
    this.lifecycle?.routed(plan);
    return plan;
  }

  /**
   * route(), or, while every worker of the model is saturated (the router's queue threshold), a
   * promise of it: the request waits, oldest first, until load drops (a first token, a finish, a
   * new worker). A request whose client goes away while held leaves the queue (499).
   */
  routeOrHold(model: string, tokens: ArrayLike<number>, whenGone?: WhenGone): RoutePlan | RouteFailure | Promise<RoutePlan | RouteFailure> {
    // An adapter's requests queue with its base model's: the same workers' load releases them.
    const served = this.lora.size > 0 ? this.servedModel(model) : model;
    const router = this.routers.get(served);
    if (router === undefined || (!this.held.has(served) && !router.saturated())) return this.route(model, tokens);
    return this.held.hold(served, model, tokens, whenGone);
  }

  /**
   * A request failed on the worker. `down`: its connection failed, it shut down or cut a stream;
   * `stalled`: a request stalled on it and its /health did not answer: either ejects it at once.
   * True when this ejects it.
   */
  reportFailure(workerId: string, down: boolean | "stalled"): boolean {
    const entry = this.workers.get(workerId);
    if (entry === undefined || this.health.isEjected(workerId)) return false;
    const now = this.opts.now();
    const ejected = down === false ? this.health.failure(workerId, now) : this.health.down(workerId, now, down === "stalled" ? "stalled" : "down");
    if (!ejected) return false;
    const router = this.poolOf(entry.record).get(entry.record.model);
    for (const s of entry.rankIds) router?.remove(s);
    const why = down === "stalled" ? "a request stalled and its /health did not answer" : down ? "it went down" : "failed requests in a row";
    this.opts.logger.warn(`worker ${workerId} left routing after ${why}; back once its /health answers`);
    return true;
  }

  /** A request succeeded on the worker. */
  reportSuccess(workerId: string): void {
    this.health.success(workerId);
  }

  /** Ejected workers due for a /health probe (each is handed out once until probed() is told). */
  probeDue(): WorkerEntry[] {
    const out: WorkerEntry[] = [];
    for (const id of this.health.due(this.opts.now())) {
      const w = this.workers.get(id);
      if (w !== undefined) out.push(w);
    }
    return out;
  }

  /** A probe ended: a worker whose /health answered 200 returns to routing. */
  probed(workerId: string, healthy: boolean): void {
    if (!this.health.probed(workerId, healthy, this.opts.now())) return;
    const entry = this.workers.get(workerId);
    if (entry === undefined) return;
    this.opts.logger.info(`worker ${workerId} answered its health probe: back in routing`);
    this.putWorker(entry.record);
  }

  /** Requests held now, over every model. */
  get heldCount(): number {
    return this.held.count;
  }

  /** The request's first token arrived: its prefill no longer loads the candidate. */
  firstToken(plan: RoutePlan): void {
    const model = plan.worker.record.model;
    const req = plan.decision.request;
    if (!req.done && req.prefillTokens > 0) this.lifecycle?.prefillCompleted(plan);
    this.poolOf(plan.worker.record).get(model)?.firstToken(req);
    this.release(model);
  }

  /** The request ended (any way): all of its load leaves the candidate. Idempotent. */
  finish(plan: RoutePlan): void {
    const model = plan.worker.record.model;
    if (!plan.decision.request.done) this.lifecycle?.freed(plan);
    this.poolOf(plan.worker.record).get(model)?.finish(plan.decision.request);
    this.release(model);
  }

  private rankIdsOf(workerIds: ReadonlySet<string>): Set<number> {
    const out = new Set<number>();
    for (const id of workerIds) for (const s of this.workers.get(id)?.rankIds ?? []) out.add(s);
    return out;
  }

  private countContextLen(record: WorkerRecord, delta: 1 | -1): void {
    const len = record.max_model_len;
    if (len === undefined) return;
    let lens = this.contextLens.get(record.model);
    if (lens === undefined) this.contextLens.set(record.model, (lens = new Map()));
    const n = (lens.get(len) ?? 0) + delta;
    if (n > 0) lens.set(len, n);
    else lens.delete(len);
    if (lens.size === 0) this.contextLens.delete(record.model);
  }

  /** Routes held requests of the model, oldest first, while its router has room (after its load dropped). */
  release(model: string): void {
    if (!this.held.has(model)) return; // the common case, on every first token and finish
    const router = this.routers.get(model);
    this.held.release(model, () => !(router !== undefined && router.size > 0 && router.saturated()), (name, tokens) => this.route(name, tokens));
  }
}

const OVERLOADED_MESSAGE = "Service temporarily overloaded: every worker is over its busy thresholds (--active-decode-blocks-threshold, --active-prefill-tokens-threshold, --active-prefill-tokens-threshold-frac); retry later";

/** Abort reason of a request whose worker left discovery (→ 502). */
export class WorkerGone extends Error {
  constructor(readonly workerId: string) {
    super(`worker ${workerId} left while the request was in flight`);
  }
}
