// The frontend role: start(config, deps) → handle, everything it opens on one
// AsyncDisposableStack (the role shape of docs/ARCHITECTURE.md, "Where each command lives").
// Discovery watches feed the routing state: worker records (candidates; direct-mode relays), agent
// host records (the agent's snapshot + stream), attachment records (CacheOwner → worker, rank).
import { islBoundingOf } from "../../config/conditional-disagg.ts";
import { randomBytes } from "node:crypto";
import type { FrontendConfig } from "../../config/frontend.ts";
import { createRng } from "../../core/random/rng.ts";
import { openDiscoveryStore } from "../../discovery/open.ts";
import { discoveryHealth, discoveryMetricFamilies } from "../../discovery/status.ts";
import { keys, parseKey } from "../../discovery/keys.ts";
import type { DiscoveryEvent, DiscoveryStore } from "../../discovery/store.ts";
import type { Logger } from "../../lib/logger.ts";
import type { RoleHandle } from "../../lib/role.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";
import { AgentHostRecordSchema, AttachmentRecordSchema, checkRecord, EVENT_MODES, WorkerRecordSchema } from "../../protocol/records.ts";
import { serveHttp } from "../../transport/http/server.ts";
import { AgentFeed } from "./agent-feed.ts";
import { DirectFeed } from "./direct-feed.ts";
import { createFrontendApp, type FrontendApp } from "./http-app.ts";
import { FrontendMetrics } from "./metrics.ts";
import { RoutingState } from "./routing-state.ts";
import { routerOptionsFrom, routerWarnings } from "../shared/routing/router-settings.ts";
import { KeepAliveClient } from "../../transport/http/keepalive-client.ts";
import { fetchTransport, keepAliveTransport, type FetchLike, type WorkerTransport } from "./worker-call.ts";
import { startReplicaSync } from "./replica-sync-start.ts";
import type { ReplicaSync } from "./replica-sync.ts";
import { loadTokenizer } from "./tokenizer-file.ts";

export interface FrontendDeps {
  logger: Logger;
  /** Injected in tests; otherwise the configured backend is opened (and closed with the role). */
  discovery?: DiscoveryStore;
  /** Worker and agent HTTP calls over this fetch instead (tests); default: workers over the pooled keep-alive client, the agent over fetch. */
  fetch?: FetchLike;
}

export interface FrontendHandle extends RoleHandle {
  readonly url: string;
  readonly app: FrontendApp;
  readonly state: RoutingState;
  readonly direct: DirectFeed;
  readonly agents: AgentFeed;
  /** With --router-replica-sync. */
  readonly replicaSync: ReplicaSync | undefined;
}

export async function startFrontend(config: FrontendConfig, deps: FrontendDeps): Promise<FrontendHandle> {
  const { logger } = deps;
  const fetchFn: FetchLike = deps.fetch ?? ((url, init) => fetch(url, init));
  await using scope = new AsyncDisposableStack();
  let callWorker: WorkerTransport = fetchTransport(fetchFn);
  if (!deps.fetch) {
    const client = new KeepAliveClient();
    scope.defer(() => client.close());
    callWorker = keepAliveTransport(client, callWorker);
  }
  const store = deps.discovery ?? scope.use(await openDiscoveryStore(config, logger));
  const t0 = performance.now();
  const now = () => performance.now() - t0;
  const idPrefix = randomBytes(6).toString("hex");
  for (const w of routerWarnings(config)) logger.warn(w);
  const router = routerOptionsFrom(config);
  // Without KV events the router predicts the index from its own decisions: no feed is followed.
  const followEvents = router.approximateTtlMs === undefined;
  const state = new RoutingState({
    router,
    overloadStatus: config.httpOverloadStatusCode,
    ejectAfter: config.workerEjectAfter,
    blockSize: config.kvCacheBlockSize,
    hasher: createBlockHasher(),
    rng: createRng(config.seed ?? randomBytes(4).readUInt32LE(0)),
    logger,
    now,
    idPrefix: `${idPrefix}-hint`,
  });
  const direct = scope.use(new DirectFeed(state, logger, now));
  const agents = scope.use(new AgentFeed(state, logger, fetchFn));
  const metrics = new FrontendMetrics({ now, routerId: idPrefix, migrationLimit: config.migrationLimit });
  const ns = config.namespace;
  const sync = config.routerReplicaSync ? await startReplicaSync(config, { state, logger, now, routerId: idPrefix }, scope) : undefined;

  const onWorker = (e: DiscoveryEvent) => {
    if (e.type === "delete") {
      const id = parseKey(e.key).ids[0];
      if (id === undefined) return;
      direct.drop(id);
      state.removeWorker(id);
      return;
    }
    const checked = checkRecord(WorkerRecordSchema, e.entry.value);
    if (!checked.ok) {
      logger.warn(`ignoring worker record ${e.entry.key}: ${checked.problem}`);
      return;
    }
    const record = checked.value;
    if (state.putWorker(record) !== undefined) {
      direct.drop(record.worker_id);
      return;
    }
    if (followEvents && record.kv_event_source_mode === EVENT_MODES.direct && record.router_events_endpoint) direct.follow(record.worker_id, record.router_events_endpoint);
    else direct.drop(record.worker_id);
  };
  const onAgent = (e: DiscoveryEvent) => {
    if (e.type === "delete") {
      const id = parseKey(e.key).ids[0];
      if (id !== undefined) agents.drop(id);
      return;
    }
    const checked = checkRecord(AgentHostRecordSchema, e.entry.value);
    if (!checked.ok) logger.warn(`ignoring agent record ${e.entry.key}: ${checked.problem}`);
    else if (followEvents) agents.follow(checked.value);
  };
  const onAttachment = (e: DiscoveryEvent) => {
    if (e.type === "delete") return; // the worker record still maps its owners; a re-attach overwrites
    const checked = checkRecord(AttachmentRecordSchema, e.entry.value);
    if (!checked.ok) logger.warn(`ignoring attachment record ${e.entry.key}: ${checked.problem}`);
    else state.mapOwner(checked.value.cache_owner_id, checked.value.worker_id, checked.value.dp_rank);
  };
  // Attachments and agents before workers: the first worker records then route with the mapping known.
  scope.use(await store.watch(keys.kindPrefix(ns, "attachment"), onAttachment));
  scope.use(await store.watch(keys.kindPrefix(ns, "agent"), onAgent));
  scope.use(await store.watch(keys.kindPrefix(ns, "worker"), onWorker));

  const app = createFrontendApp({
    state,
    metrics,
    logger,
    maxRequestBytes: config.maxRequestBytes,
    maxOutputTokens: config.maxTokensLimit,
    maxPromptBytes: config.maxPromptBytes,
    bodyTimeoutMs: config.bodyTimeoutMs,
    stallTimeoutMs: config.workerStallTimeout * 1000,
    callWorker,
    now,
    wallSeconds: () => Date.now() / 1000,
    feedMetrics: () => [...direct.metrics(), ...agents.metrics(), ...discoveryMetricFamilies(store), ...(sync?.families() ?? [])],
    discoveryHealth: () => discoveryHealth(store),
    // Workers that publish through an agent while no agent is followed live: their blocks are missing.
    // A worker's cursor: its relay's (direct mode) or the agent stream its rank 0 follows.
    indexCursor: (workerId) => direct.cursorOf(workerId) ?? agents.cursorOfRank(state.rankIdOf(workerId, 0)),
    agentHealth: () => ({ ...agents.health(), workers_without_agent: agents.liveCount() > 0 ? 0 : state.workerList().filter((w) => w.record.kv_event_source_mode === EVENT_MODES.stateAgent).length }),
    strictHealth: config.strictHealth,
    ...(config.tokenizer !== undefined ? { tokenize: loadTokenizer(config.tokenizer) } : {}),
    replicaSyncHealth: sync === undefined ? undefined : () => sync.health(),
    idPrefix,
    failures: { retries: config.routerRetries, migrationLimit: config.migrationLimit, migrationMaxSeqLen: config.migrationMaxSeqLen },
    islBounding: islBoundingOf(config),
  });
  // Bun's own body limit sits far above ours, so the app answers 413 in OpenAI's shape (it stops
  // reading at --max-request-bytes; a declared Content-Length above it is refused unread).
  const http = serveHttp({ host: config.host, port: config.httpPort, fetch: (req) => app.fetch(req), maxRequestBodySize: Math.max(config.maxRequestBytes * 2, 1 << 30), logger });
  scope.defer(async () => {
    // In-flight requests first: their workers' streams are cancelled, then the listener closes.
    for (const w of state.workerList()) for (const c of w.inflight) c.abort(new Error("frontend shutting down"));
    await http.stop(true);
  });
  // Runs first (the stack unwinds in reverse): no retry or migration of requests the shutdown cuts.
  scope.defer(() => app.close?.());
  logger.info(`OpenAI-compatible API on ${http.url} (router ${config.routerMode}${followEvents ? "" : " without KV events"}, namespace ${ns}); ${state.workerCount} worker(s) known`);

  const owned = scope.move();
  const close = () => owned.disposeAsync();
  return {
    ready: Promise.resolve(),
    ports: { http: http.port },
    url: http.url,
    app,
    state,
    direct,
    agents,
    replicaSync: sync,
    close,
    [Symbol.asyncDispose]: close,
  };
}
