// The mocker process (SPEC §3): N workers × D ranks of mock engines on one live loop, one HTTP
// server, raw KV-event PUBs (+ replay), the direct-mode relay or state-agent intents, and
// discovery records. Lifecycle: staggered register (worker record) → attach (publish intents, in
// state-agent mode; the agent dials the raw PUBs) → healthy; close() stops accepting,
// cancels in-flight requests, withdraws intents and records, then closes sockets. If start-up
// fails after anything was registered, it is all withdrawn before the error surfaces.
import { randomBytes } from "node:crypto";
import type { MockerConfig } from "../../config/mocker.ts";
import { createEngine } from "../../core/engine/mock-engine.ts";
import { engineConfigFrom } from "../engine-config.ts";
import type { StepResult } from "../../core/engine/engine-types.ts";
import { keys } from "../../discovery/keys.ts";
import { openDiscoveryStore } from "../../discovery/open.ts";
import { discoveryHealth, discoveryMetricFamilies } from "../../discovery/status.ts";
import type { DiscoveryStore, LeasedRecord } from "../../discovery/store.ts";
import { LOG_LEVELS, type Logger } from "../../lib/logger.ts";
import { processAlive } from "../../lib/process-alive.ts";
import type { RoleHandle } from "../../lib/role.ts";
import { createBlockHasher, xxh3 } from "../../lib/xxh3.ts";
import { holdPort, type HeldPort } from "../../transport/port-hold.ts";
import { createPortPlan } from "../../transport/port-plan.ts";
import { serveHttp, type HttpServer } from "../../transport/http/server.ts";
import { createMockerFetch } from "./http-api.ts";
import { kvStateEndpoint, workerIdentities, type WorkerIdentity } from "./identity.ts";
import { LiveLoop } from "./live-loop.ts";
import { openWorkerOutlets, type WorkerOutlets } from "./outlets.ts";
import { advertisedHost, attachmentIntents, tcpEndpoint, workerRecord, type WorkerEndpoints } from "./records.ts";
import { registerWorkers } from "./registration.ts";
import { refuseSlotOverlap } from "./slot-overlap.ts";
import { readTopology, workerDomain } from "./topology.ts";
import { MockerWorkerPool, RankSlot } from "./worker-pool.ts";

export interface MockerDeps {
  logger: Logger;
  env: Readonly<Record<string, string | undefined>>;
  /** Injected in tests; otherwise the configured backend is opened (and closed with the role). */
  discovery?: DiscoveryStore;
}

export interface MockerHandle extends RoleHandle {
  readonly httpUrl: string;
  readonly workers: readonly WorkerIdentity[];
  /** Actual raw PUB / replay ports per worker and rank. */
  readonly endpoints: readonly WorkerEndpoints[];
  readonly pool: MockerWorkerPool;
  /** Per worker: its raw publishers and relay (tests wait on subscribers through these). */
  readonly outlets: readonly WorkerOutlets[];
}

const LIMITS = { maxPromptTokens: 1 << 20, maxOutputTokens: 1 << 20 };

export async function startMocker(config: MockerConfig, deps: MockerDeps): Promise<MockerHandle> {
  const { logger } = deps;
  const hasher = createBlockHasher();
  const processId = randomBytes(4).toString("hex");
  const incarnation = Date.now();
  const identities = workerIdentities(config, (d, s) => xxh3(d, s), processId);
  const topology = readTopology(deps.env);
  const t0 = performance.now();
  const loop = new LiveLoop<StepResult>(() => performance.now() - t0);

  // Everything opened so far, closed in reverse on failure or shutdown.
  const cleanups: (() => void | Promise<void>)[] = [];
  const records: LeasedRecord[] = [];
  let store = deps.discovery;
  let http: HttpServer | undefined;
  let pool: MockerWorkerPool | undefined;
  let closed: Promise<void> | undefined;

  const close = () =>
    (closed ??= (async () => {
      // Stop accepting without waiting for open streams (stop(false) resolves only when they end):
      // in-flight requests are cancelled right away, so shutdown never waits on a long generation.
      void http?.stop(false).catch(() => {});
      const cancelled = pool?.cancelAll() ?? 0;
      if (cancelled > 0) logger.info(`cancelled ${cancelled} in-flight request(s)`);
      // Intents and records first, so no agent or router dials a socket about to vanish.
      for (const r of records.splice(0).reverse()) await r.withdraw().catch((err: unknown) => logger.warn(`withdrawing ${r.key}: ${String(err)}`));
      loop.close();
      for (const c of cleanups.splice(0).reverse()) await c();
      await http?.stop(true).catch(() => {});
    })());

  try {
    if (!store) {
      const opened = await openDiscoveryStore(config, logger);
      store = opened;
      cleanups.push(() => opened.close());
    }
    const engineConfig = engineConfigFrom(config);
    const wallSeconds = () => Date.now() / 1000;
    const slots = identities.map((id) =>
      Array.from({ length: config.dataParallelSize }, (_, r) => new RankSlot(id.index, r, createEngine(engineConfig, { hasher }), wallSeconds, logger)),
    );
    const outlets: WorkerOutlets[] = [];
    const hints: HeldPort[][] = [];
    // Port-0 listeners (raw PUBs, replay, relays, hint ports) take consecutive free ports from one
    // plan: thousands of kernel port-0 searches were most of a 4,096-worker start-up.
    const ports = createPortPlan();
    for (const id of identities) {
      const o = openWorkerOutlets(config, id, logger, ports);
      outlets.push(o);
      cleanups.push(() => o.close());
      slots[id.index]!.forEach((slot, r) => slot.outlets.push(...o.forRank(r)));
      if (config.kvStateAgentRouterHints) {
        const held = id.cacheOwnerIds.map(() => holdPort(config.host, 0, ports));
        hints.push(held);
        cleanups.push(() => held.forEach((h) => h.close()));
      }
    }
    const discovery = store;
    pool = new MockerWorkerPool(slots, loop, logger, () => [...outlets.flatMap((o) => o.metrics()), ...discoveryMetricFamilies(discovery)], () => discoveryHealth(discovery));
    const served = pool;
    http = serveHttp({ host: config.host, port: config.httpPort, fetch: createMockerFetch(served, LIMITS) });
    const httpUrl = http.url;
    logger.info(`serving ${config.numWorkers} worker(s) × ${config.dataParallelSize} rank(s) of ${config.modelName} on ${httpUrl}`);

    const endpoints: WorkerEndpoints[] = identities.map((id, i) => ({
      rawPorts: outlets[i]!.rawPorts,
      replayPorts: outlets[i]!.replayPorts,
      routerEventsEndpoint: outlets[i]!.routerEventsEndpoint,
      hintPorts: hints[i]?.map((h) => h.port),
    }));
    // Ports picked by the OS (0) go into discovery and the logs (SPEC §7): one summary at info
    // (a port list while it is short), each worker's endpoints at debug.
    const host = advertisedHost(config);
    const summary = [
      ["raw PUB", endpoints.flatMap((e) => e.rawPorts)],
      ["replay", endpoints.flatMap((e) => e.replayPorts ?? [])],
    ] as const;
    const relays = endpoints.filter((e) => e.routerEventsEndpoint).length;
    const eventLine = [
      ...summary.filter(([, ports]) => ports.length > 0).map(([what, ports]) => `${what} ${portList(host, ports)}`),
      relays > 0 ? `${relays} router-event relay(s)` : "",
    ].filter(Boolean);
    logger.info(`events: ${eventLine.join("; ") || "no event sockets"}${identities.length > 1 ? " (per worker at --log-level debug, and in discovery)" : ""}`);
    // Built only when they will be printed: thousands of workers make thousands of lines.
    for (const id of logger.level >= LOG_LEVELS.debug ? identities : []) {
      const ep = endpoints[id.index]!;
      const parts = [
        ep.rawPorts.length > 0 ? `raw ${ep.rawPorts.map((p) => tcpEndpoint(host, p)).join(" ")}` : "",
        ep.replayPorts ? `replay ${ep.replayPorts.map((p) => tcpEndpoint(host, p)).join(" ")}` : "",
        ep.routerEventsEndpoint ? `router events ${ep.routerEventsEndpoint}` : "",
      ].filter(Boolean);
      logger.debug(`worker ${id.index} (${id.workerId}): ${parts.join("; ") || "no event sockets"}`);
    }
    if (config.kvStateAgent) {
      const first = identities[0]!;
      logger.info(`state-agent mode: ${identities.length * config.dataParallelSize} cache owner(s) from slot ${config.kvStateAgentCacheSlot}; worker 0 raw topic ${first.rawTopic} (each worker's at --log-level debug)`);
    }
    const register = async () => {
      // Before anything is published: another live mocker's slot in our range refuses the start.
      const host = advertisedHost(config);
      const slots = identities.flatMap((id) => id.cacheOwnerIds.map((owner, r) => [owner, tcpEndpoint(host, endpoints[id.index]!.rawPorts[r]!)] as const));
      const first = config.kvStateAgentCacheSlot ?? 0;
      await refuseSlotOverlap(store!, {
        namespace: config.namespace,
        owners: new Map(slots),
        describe: `pid ${process.pid}, slots ${first}–${first + slots.length - 1}, raw host ${host}`,
        selfInstanceId: store!.owner?.instanceId,
        ownerAlive: config.discoveryBackend === "file" ? processAlive : undefined,
      });
      await registerWorkers({
        store: store!,
        workers: identities,
        staggerDelayS: config.staggerDelay,
        recordsOf: (id) => {
          const ep = endpoints[id.index]!;
          const domain = workerDomain(topology, id.index, config.kvTransferIslandSize);
          return [
            { key: keys.worker(config.namespace, id.workerId), value: workerRecord(config, id, ep, { httpUrl, topology, domain }) },
            ...attachmentIntents(config, id, ep, { incarnation, kvStateEndpoint: kvStateEndpoint(config) }).map((intent) => ({
              key: keys.intent(config.namespace, intent.cache_owner_id, id.workerId),
              value: intent,
            })),
          ];
        },
        keep: async (record) => {
          if (!closed) {
            records.push(record);
            return true;
          }
          // Put while close() ran (its withdrawals are done or under way): withdraw it here.
          await record.withdraw().catch((err: unknown) => logger.warn(`withdrawing ${record.key}: ${String(err)}`));
          return false;
        },
        registered: (id) => {
          if (config.kvStateAgent) logger.debug(`worker ${id.index}: raw topic ${id.rawTopic}, cache owners ${id.cacheOwnerIds.join(", ")}`);
          served.registered++;
        },
        closing: () => closed !== undefined,
      });
      if (!closed) logger.info(`all ${identities.length} worker(s) registered`);
    };
    // A failed registration withdraws whatever was already registered before the error surfaces.
    const ready = register().catch(async (err: unknown) => {
      // The message, not String(err): class names are minified in the compiled binary ("R: …").
      logger.error(`registration failed: ${err instanceof Error ? err.message : String(err)}`);
      await close();
      throw err;
    });

    return {
      ready,
      ports: { http: http.port, raw: endpoints.flatMap((e) => e.rawPorts), replay: endpoints.flatMap((e) => e.replayPorts ?? []) },
      httpUrl,
      workers: identities,
      endpoints,
      pool: served,
      outlets,
      close,
      [Symbol.asyncDispose]: close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** `tcp://h:5557 tcp://h:5558` while short; `1,024 ports 30000–31023 on h` beyond 8. */
function portList(host: string, ports: readonly number[]): string {
  if (ports.length <= 8) return ports.map((p) => tcpEndpoint(host, p)).join(" ");
  let lo = Infinity;
  let hi = -Infinity;
  for (const p of ports) [lo, hi] = [Math.min(lo, p), Math.max(hi, p)];
  return `${ports.length.toLocaleString("en-US")} ports ${lo}–${hi} on ${host}`;
}
