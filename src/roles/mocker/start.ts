// The `mocker` role: start(config, deps) → handle. N workers × D ranks of mock engines on one live
// loop behind one HTTP server, their event sockets, then their discovery records (registered in
// the background: `ready`). Everything opened goes on one AsyncDisposableStack as it opens, so a
// failed start unwinds by construction. Closing stops accepting and cancels in-flight requests,
// withdraws intents and records (so no agent or router dials a socket about to vanish), then
// closes sockets; a failed registration closes the role before `ready` rejects.
import { randomBytes } from "node:crypto";
import type { MockerConfig } from "../../config/mocker.ts";
import type { StepResult } from "../../core/engine/engine-types.ts";
import { openDiscoveryStore } from "../../discovery/open.ts";
import { discoveryHealth, discoveryMetricFamilies } from "../../discovery/status.ts";
import type { DiscoveryStore } from "../../discovery/store.ts";
import type { Logger } from "../../lib/logger.ts";
import type { RoleHandle } from "../../lib/role.ts";
import { createBlockHasher, xxh3 } from "../../lib/xxh3.ts";
import { serveHttp } from "../../transport/http/server.ts";
import { createRankEngines } from "./engines.ts";
import { openEventSockets } from "./event-sockets.ts";
import { createAdminFetch } from "./faults/admin-app.ts";
import { rankEventFaults } from "./faults/event-faults.ts";
import { unsupportedKind, wireFaultHooks } from "./faults/fault-hooks.ts";
import { FaultTable } from "./faults/fault-table.ts";
import { planRequest } from "./faults/http-faults.ts";
import { createMockerFetch } from "./http-app.ts";
import { workerIdentities, type WorkerIdentity } from "./identity.ts";
import { LiveLoop } from "./live-loop.ts";
import type { WorkerOutlets } from "./outlets.ts";
import { attachLora } from "./lora-setup.ts";
import { HeldRecords, publishMockerRecords, type MockerRecordsPlan } from "./publish-records.ts";
import { advertisedHost, type WorkerEndpoints } from "./records.ts";
import { openDisagg } from "./pd/open-disagg.ts";
import { logEventSockets, logWorkerApis } from "./startup-log.ts";
import { readTopology } from "./topology.ts";
import { serveWorkerApis } from "./worker-api-servers.ts";
import { MockerWorkerPool } from "./worker-pool.ts";

export interface MockerDeps {
  logger: Logger;
  env: Readonly<Record<string, string | undefined>>;
  /** Injected in tests; otherwise the configured backend is opened (and closed with the role). */
  discovery?: DiscoveryStore;
  /** What the exit fault calls (default process.exit; tests inject their own). */
  exit?: (code: number) => void;
}

export interface MockerHandle extends RoleHandle {
  readonly httpUrl: string;
  /** Each worker's OpenAI API base URL, by index (--openai-port-base / --openai-ports); undefined when off. */
  readonly openaiUrls: readonly string[] | undefined;
  readonly workers: readonly WorkerIdentity[];
  /** Actual raw PUB / replay ports per worker and rank. */
  readonly endpoints: readonly WorkerEndpoints[];
  readonly pool: MockerWorkerPool;
  /** Per worker: its raw publishers and relay (tests wait on subscribers through these). */
  readonly outlets: readonly WorkerOutlets[];
  /** The injected faults (the fault API's table; empty unless faults were posted). */
  readonly faults: FaultTable;
  /** A prefill worker's KV transfer endpoint port (undefined on other sides). */
  readonly kvTransferPort: number | undefined;
}

const LIMITS = { maxPromptTokens: 1 << 20 };

export async function startMocker(config: MockerConfig, deps: MockerDeps): Promise<MockerHandle> {
  const { logger } = deps;
  const incarnation = Date.now();
  const workers = workerIdentities(config, (d, s) => xxh3(d, s), randomBytes(4).toString("hex"));
  const topology = readTopology(deps.env);
  await using scope = new AsyncDisposableStack();

  const store = deps.discovery ?? scope.use(await openDiscoveryStore(config, logger));
  const t0 = performance.now();
  const clockMs = () => performance.now() - t0;
  const ranks = createRankEngines(config, workers, logger, clockMs);
  // Faults exist in every process (so the code paths are one); only --admin lets anyone post them.
  const faults = new FaultTable(workers.map((w) => w.workerId), config.dataParallelSize, logger);
  const stopping = new AbortController();
  scope.defer(() => {
    stopping.abort();
    faults.close();
  });
  const { outlets, endpoints } = openEventSockets(config, workers, logger, scope, (w, r) => rankEventFaults(faults, w, r));
  ranks.forEach((worker, i) =>
    worker.forEach((rank, r) => {
      rank.outlets.push(...outlets[i]!.forRank(r));
      rank.rawPublisher = outlets[i]!.publishers[r];
    }),
  );
  const loop = new LiveLoop<StepResult>(clockMs);
  scope.defer(() => loop.close()); // pushed after the outlets: engines stop stepping before those close
  // Prefill or decode worker: the hand-over's side (a prefill worker's transfer endpoint opens here).
  const disagg = openDisagg(config, { workerIds: workers.map((w) => w.workerId), advertisedHost: advertisedHost(config), logger, roomsOnTransferPort: true }, scope);
  const pool = new MockerWorkerPool(ranks, loop, logger, () => [...outlets.flatMap((o) => o.metrics()), ...discoveryMetricFamilies(store), ...(disagg?.stats.families() ?? [])], () => discoveryHealth(store), workers.map((w) => w.workerId), config.modelName);
  if (disagg) {
    pool.disagg = disagg.side;
    for (const r of ranks.flat()) r.disagg = disagg.side;
    for (const ep of endpoints) {
      ep.disaggregationMode = disagg.side.mode === "prefill" ? "prefill" : "decode";
      if (disagg.endpoint) ep.kvTransferEndpoint = `${disagg.endpoint.host.includes(":") ? `[${disagg.endpoint.host}]` : disagg.endpoint.host}:${disagg.endpoint.port}`;
    }
  }
  const lora = attachLora(config, pool, ranks, workers, logger);
  wireFaultHooks({ table: faults, pool, store, logger, exit: deps.exit ?? ((code) => process.exit(code)) });
  // An unknown worker or rank gets its 404 from the pool, not an injected fault.
  const requestFaults = { plan: (w: number, r: number) => (ranks[w]?.[r] ? planRequest(faults, w, r) : undefined), closing: stopping.signal };
  // Each worker's own OpenAI API (--openai-port-base): bound before the process serves anything, so a port in use stops it first.
  const apis = serveWorkerApis(config, { engines: pool, logger, faults: requestFaults, closing: stopping.signal }, scope);
  apis?.urls.forEach((url, i) => (endpoints[i]!.openaiUrl = url));
  // The fetch needs the URL the server gets: the residency routes read it when asked.
  const residency = { ranks, workerIds: pool.workerIds, requestUrl: "", blockSize: config.blockSize, hasher: createBlockHasher() };
  const fetch = createMockerFetch(pool, { maxPromptTokens: LIMITS.maxPromptTokens, maxOutputTokens: config.maxTokensLimit, maxModelLen: config.maxModelLen }, {
    admin: config.admin ? createAdminFetch(faults, (kind) => unsupportedKind(kind, store, ranks.some((w) => w.some((r) => r.rawPublisher !== undefined)))) : undefined,
    residency,
    faults: requestFaults,
  });
  const http = serveHttp({ host: config.host, port: config.httpPort, fetch, logger });
  residency.requestUrl = `${http.url}/v1/generate`;
  scope.defer(() => http.stop(true).catch(() => {}));
  logger.info(`serving ${config.numWorkers} worker(s) × ${config.dataParallelSize} rank(s) of ${config.modelName} on ${http.url}`);
  logEventSockets(config, workers, endpoints, logger);
  if (apis) logWorkerApis(config.host, apis.ports, logger);

  const records = scope.use(new HeldRecords(logger));
  scope.defer(() => {
    // First on close. Stop accepting without waiting for open streams (stop(false) resolves only
    // when they end): in-flight requests are cancelled at once, so shutdown never waits on a long generation.
    void http.stop(false).catch(() => {});
    apis?.stopAccepting();
    stopping.abort(); // hung requests (the hang fault) end too
    const cancelled = pool.cancelAll();
    if (cancelled > 0) logger.info(`cancelled ${cancelled} in-flight request(s)`);
  });

  const owned = scope.move();
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= owned.disposeAsync());
  const recordsPlan: MockerRecordsPlan = {
    config,
    store,
    workers,
    endpoints,
    httpUrl: http.url,
    topology,
    incarnation,
    records,
    logger,
    registered: () => {
      pool.registered++;
    },
    closing: () => closing !== undefined,
    loraAdapters: (w) => lora.adapters.names(w),
  };
  lora.follow(recordsPlan);
  const ready = publishMockerRecords(recordsPlan).catch(async (err: unknown) => {
    // The message, not String(err): class names are minified in the compiled binary ("R: …").
    logger.error(`registration failed: ${err instanceof Error ? err.message : String(err)}`);
    await close();
    throw err;
  });

  return {
    ready,
    kvTransferPort: disagg?.endpoint?.port,
    ports: { http: http.port, raw: endpoints.flatMap((e) => e.rawPorts), replay: endpoints.flatMap((e) => e.replayPorts ?? []), openai: apis?.ports ?? [] },
    httpUrl: http.url,
    openaiUrls: apis?.urls,
    workers,
    endpoints,
    pool,
    outlets,
    faults,
    close,
    [Symbol.asyncDispose]: close,
  };
}
