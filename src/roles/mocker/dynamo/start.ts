// `mocker --runtime dynamo`: the same engines, live loop and worker pool as every mocker, behind
// Dynamo's surfaces instead of kvcr-mock's: each worker registers as a Dynamo worker does (endpoint
// instance, model card, kv-events channel and source per rank) in Dynamo's file store or etcd, serves the
// TCP request plane and publishes its KV events on the ZeroMQ event plane, so Dynamo's own
// frontend discovers it, routes to it and KV-routes on its events. DYN_SYSTEM_PORT serves /live,
// /health and /metrics as Dynamo's workers do. Prefill and decode workers register as Dynamo's do
// (the prefill component, the worker types and needs, a bootstrap address with --bootstrap-ports)
// and hand the KV over as the rest of the mocker does (pd/); LoRA adapters get cards of their own;
// in KVCR mode Dynamo's state agent attaches the raw streams (state-agent.ts). docs/DECISIONS.md
// ("Joining Dynamo") says why each choice is made.
import type { MockerConfig } from "../../../config/mocker.ts";
import type { StepResult } from "../../../core/engine/engine-types.ts";
import { ConfigError } from "../../../lib/errors.ts";
import type { Logger } from "../../../lib/logger.ts";
import type { RoleHandle } from "../../../lib/role.ts";
import { xxh3 } from "../../../lib/xxh3.ts";
import {
  DYNAMO_BUCKETS, eventChannelRecord, eventKey, hexId, instanceKey, instancePath, instanceRecord, KV_EVENTS_TOPIC, kvEventSourceRecord, loraModelKey, loraModelRecord, modelRecord, parseEndpointId, tcpTransport, type ModelCardInput,
} from "../../../protocol/dynamo/discovery-records.ts";
import { parseEtcdEndpoints } from "../../../protocol/etcd-endpoints.ts";
import { PROMETHEUS_CONTENT_TYPE, renderMetrics } from "../../../protocol/prometheus.ts";
import { serveHttp } from "../../../transport/http/server.ts";
import { createRankEngines } from "../engines.ts";
import { workerIdentities } from "../identity.ts";
import { LiveLoop } from "../live-loop.ts";
import { attachLora } from "../lora-setup.ts";
import { openEventSockets } from "../event-sockets.ts";
import { tcpEndpoint } from "../records.ts";
import { STATE_AGENT_SOURCE_MODE } from "../../../protocol/dynamo/state-agent-records.ts";
import { attachToDynamoAgent, watchAttachments } from "./state-agent.ts";
import { MockerWorkerPool } from "../worker-pool.ts";
import { DynamoEventPublisher, jsonSafeId } from "./event-publisher.ts";
import { DynamoEtcdRecords } from "./etcd-records.ts";
import { DynamoFileRecords, type DynamoRecords } from "./file-records.ts";
import { readModelDir } from "./model-card.ts";
import { agentFamilies, handoffFamilies, requestPlaneFamilies } from "./metric-families.ts";
import { DynamoRequestPlane } from "./request-plane.ts";
import { DEFAULT_KV_TRANSFER_HOLD_TIMEOUT_S } from "../../../config/disaggregation.ts";
import { BootstrapRooms } from "../pd/bootstrap-rooms.ts";
import { RENDEZVOUS_TIMEOUT_MS } from "../pd/handoff-destination.ts";
import { listenBootstrap, type HandoffStats } from "../pd/handoff-source.ts";
import { openDisagg } from "../pd/open-disagg.ts";

/** `--kv-state-endpoint ns/component/endpoint` as Dynamo's triple. */
function parseStateEndpoint(text: string): { namespace: string; component: string; name: string } {
  const parts = text.split("/");
  if (parts.length !== 3 || parts.some((p) => p === "")) throw new ConfigError([`--kv-state-endpoint: got ${JSON.stringify(text)}, expected NAMESPACE/COMPONENT/ENDPOINT`]);
  return { namespace: parts[0]!, component: parts[1]!, name: parts[2]! };
}

function etcdEndpointList(spec: string | undefined): string[] {
  const parsed = parseEtcdEndpoints(spec ?? "");
  if (!parsed.ok) throw new ConfigError([`--etcd-endpoints (or ETCD_ENDPOINTS): ${parsed.problem}`]);
  return parsed.endpoints;
}

export interface DynamoMockerHandle extends RoleHandle {
  /** Each worker's Dynamo instance id (≤ 2^53−1). */
  readonly instanceIds: readonly number[];
  readonly requestPlane: DynamoRequestPlane;
  readonly publishers: readonly (readonly DynamoEventPublisher[])[];
  readonly records: DynamoRecords;
  readonly pool: MockerWorkerPool;
}

const LIMITS = { maxPromptTokens: 1 << 20 };

export async function startDynamoMocker(config: MockerConfig, deps: { logger: Logger; env: Readonly<Record<string, string | undefined>> }): Promise<DynamoMockerHandle> {
  const { logger, env } = deps;
  if (config.discoveryBackend === "etcd" && !env.DYN_DISCOVERY_BACKEND) {
    logger.info(`discovery: etcd at ${config.etcdEndpoints} (Dynamo's default backend; --discovery-backend file or DYN_DISCOVERY_BACKEND=file for a file store)`);
  }
  const mode = config.disaggregationMode;
  // Dynamo's defaults: prefill workers are their own component.
  const ep = parseEndpointId(config.endpoint ?? `dyn://${config.namespace}.${mode === "prefill" ? "prefill" : "backend"}.generate`)!;
  const model = readModelDir(config.modelPath!);
  const dp = config.dataParallelSize;
  await using scope = new AsyncDisposableStack();

  const workers = workerIdentities(config, (d, s) => xxh3(d, s), "dynamo");
  const instanceIds = workers.map(() => jsonSafeId());
  const t0 = performance.now();
  const clockMs = () => performance.now() - t0;
  const ranks = createRankEngines(config, workers, logger, clockMs, model.outputIds);
  const loop = new LiveLoop<StepResult>(clockMs);
  // KVCR mode: each rank's raw vLLM stream, for Dynamo's state agent to attach (no direct events).
  // A decode worker publishes no KV events (Dynamo's routes its decode legs without them).
  const sockets = config.kvStateAgent ? openEventSockets(config, workers, logger, scope) : undefined;
  const publishers = workers.map((_, i) => (mode === "decode" || sockets ? [] : Array.from({ length: dp }, (_, r) => new DynamoEventPublisher(config.host, instanceIds[i]!, r, logger))));
  scope.defer(() => publishers.flat().forEach((p) => p.close()));
  ranks.forEach((worker, i) =>
    worker.forEach((rank, r) => {
      if (publishers[i]![r]) rank.outlets.push(publishers[i]![r]!);
      if (sockets) {
        rank.outlets.push(...sockets.outlets[i]!.forRank(r));
        rank.rawPublisher = sockets.outlets[i]!.publishers[r];
      }
    }),
  );
  scope.defer(() => loop.close());
  const rooms = config.bootstrapPorts ? new BootstrapRooms(RENDEZVOUS_TIMEOUT_MS, (config.kvTransferHoldTimeout ?? DEFAULT_KV_TRANSFER_HOLD_TIMEOUT_S) * 1000) : undefined;
  if (rooms) scope.defer(() => rooms.close());
  const disagg = openDisagg(config, { workerIds: instanceIds.map(String), advertisedHost: config.host, logger, ...(rooms ? { rooms } : {}) }, scope);
  const handoffs: HandoffStats = { handedOver: 0, aborted: 0, timedOut: 0, failed: 0 };
  const timing = { mode: config.kvTransferTimingMode ?? "full_prompt", kvBytesPerToken: config.kvBytesPerToken, bandwidthGbS: mode === "prefill" ? (config.kvTransferBandwidth ?? null) : null };
  const bootstrapPorts = (config.bootstrapPorts ?? []).map((port) => scope.use(listenBootstrap(config.host, port, { rooms: rooms!, stats: handoffs, logger, timing })).port);
  const agentState = { intents: 0, attached: 0 };
  const pool = new MockerWorkerPool(ranks, loop, logger, () => [...(sockets?.outlets.flatMap((o) => o.metrics()) ?? []), ...(sockets ? agentFamilies(agentState) : []), ...(disagg?.stats.families() ?? []), ...(rooms ? handoffFamilies(handoffs) : [])], undefined, instanceIds.map(String), config.modelName);
  // --lora-modules: each adapter a card of its own beside the base model's (below).
  const lora = attachLora(config, pool, ranks, workers, logger);
  if (config.loraModulesPerWorker !== undefined) {
    logger.warn("--lora-modules-per-worker: Dynamo's frontend sends an adapter's requests to any worker of the endpoint, not only to those holding it; a request reaching a worker without the adapter fails");
  }
  if (disagg) {
    pool.disagg = disagg.side;
    for (const r of ranks.flat()) r.disagg = disagg.side;
  }

  const requestPlane = scope.use(new DynamoRequestPlane({
    host: config.host,
    workers: workers.map((w, i) => ({ index: w.index, path: instancePath(ep, instanceIds[i]!), dataParallelSize: dp })),
    engines: pool,
    logger,
    maxPromptTokens: LIMITS.maxPromptTokens,
    defaultMaxTokens: Math.min(config.maxTokensLimit, config.maxModelLen),
    mode,
  }));
  const hostPort = `${config.host.includes(":") ? `[${config.host}]` : config.host}:${requestPlane.port}`;

  // /live, /health and /metrics on DYN_SYSTEM_PORT, as Dynamo's workers serve them (off when unset).
  const systemPort = env.DYN_SYSTEM_PORT ? Number(env.DYN_SYSTEM_PORT) : undefined;
  if (systemPort !== undefined) {
    if (!Number.isInteger(systemPort) || systemPort < 0 || systemPort > 65535) throw new ConfigError([`DYN_SYSTEM_PORT: got ${JSON.stringify(env.DYN_SYSTEM_PORT)}, expected a port number`]);
    const status = () => ({ status: "ready", endpoints: Object.fromEntries(instanceIds.map((id) => [`${ep.name}-${hexId(id)}`, "ready"])) });
    const http = serveHttp({
      host: config.host,
      port: systemPort,
      logger,
      fetch: async (req) => {
        const path = new URL(req.url).pathname;
        if (path === "/live" || path === "/health") return Response.json(status());
        if (path === "/metrics") return new Response(renderMetrics([...pool.metrics(), ...requestPlaneFamilies(requestPlane.stats)]), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
        return new Response("not found\n", { status: 404 });
      },
    });
    scope.defer(() => http.stop(true).catch(() => {}));
  }

  // Records last, so they are withdrawn first on close: nobody routes to a worker that is going.
  const records: DynamoRecords = scope.use(
    config.discoveryBackend === "etcd"
      ? await DynamoEtcdRecords.open(etcdEndpointList(config.etcdEndpoints), logger)
      : new DynamoFileRecords(config.discoveryDir!, `${ep.namespace}/${ep.component}/${ep.name}/${config.modelName}`, logger),
  );
  for (let i = 0; i < workers.length; i++) {
    const id = instanceIds[i]!;
    await records.put(DYNAMO_BUCKETS.instances, instanceKey(ep, id), instanceRecord(ep, id, hostPort));
    for (const pub of publishers[i]!) {
      await records.put(DYNAMO_BUCKETS.eventChannels, eventKey(ep, KV_EVENTS_TOPIC, pub.publisherId), eventChannelRecord(ep, KV_EVENTS_TOPIC, pub.publisherId, pub.endpoint));
      await records.put(DYNAMO_BUCKETS.eventSources, eventKey(ep, KV_EVENTS_TOPIC, pub.publisherId), kvEventSourceRecord(ep, pub.publisherId, id, pub.dpRank));
    }
  }
  if (sockets) {
    // One attachment intent per (worker, rank) before the cards, as Dynamo's worker attaches before it
    // registers its model: a frontend that saw the card first would never route on the agent's events.
    const kvStateEndpoint = config.kvStateEndpoint ? parseStateEndpoint(config.kvStateEndpoint) : { namespace: ep.namespace, component: ep.component, name: ep.name };
    const intents = workers.flatMap((w, i) =>
      w.cacheOwnerIds.map((owner, r) => ({
        producer: { namespace: ep.namespace, component: ep.component, endpoint: ep.name, instanceId: instanceIds[i]!, transport: tcpTransport(hostPort, ep, instanceIds[i]!) },
        cacheOwnerId: owner,
        workerId: instanceIds[i]!,
        dpRank: r,
        kvStateEndpoint,
        kvBlockSize: config.blockSize,
        rawEndpoint: tcpEndpoint(config.kvStateAgentRawHost!, sockets.endpoints[i]!.rawPorts[r]!),
        rawTopic: w.rawTopic,
      })),
    );
    const attached = await attachToDynamoAgent(records, ep.namespace, intents, logger);
    logger.info(`state agent: ${attached.keys.length} attachment intent(s) for Dynamo's host of ${attached.host.maxSlots} slot(s)`);
    const watching = new AbortController();
    scope.defer(() => watching.abort());
    agentState.intents = attached.written.length;
    await new Promise<void>((settled) => void watchAttachments(records, ep, attached, logger, agentState, watching.signal, undefined, settled));
  }
  for (let i = 0; i < workers.length; i++) {
    const id = instanceIds[i]!;
    const card: ModelCardInput = {
      displayName: config.modelName,
      sourcePath: model.path,
      tokenizer: model.tokenizer,
      config: model.config,
      tokenizerConfig: model.tokenizerConfig,
      architecturalMaxContextLength: model.maxPositionEmbeddings,
      blockSize: config.blockSize,
      workerType: mode === "agg" ? "aggregated" : mode,
      totalKvBlocks: config.numGpuBlocksOverride,
      maxNumSeqs: config.maxNumSeqs,
      maxNumBatchedTokens: config.maxNumBatchedTokens,
      dataParallelSize: dp,
      ...(bootstrapPorts[i] !== undefined ? { bootstrap: { host: config.host, port: bootstrapPorts[i]! } } : {}),
      ...(sockets ? { kvEventSourceMode: STATE_AGENT_SOURCE_MODE } : {}),
    };
    await records.put(DYNAMO_BUCKETS.mdc, instanceKey(ep, id), modelRecord(ep, id, card));
    for (const name of lora.adapters.names(i)) {
      await records.put(DYNAMO_BUCKETS.mdc, loraModelKey(ep, id, name), loraModelRecord(ep, id, card, { name, id: lora.adapters.idOf(name)! }));
    }
  }
  scope.defer(() => {
    // First on close: refuse nothing new, end every in-flight request.
    const cancelled = pool.cancelAll();
    if (cancelled > 0) logger.info(`cancelled ${cancelled} in-flight request(s)`);
  });
  logger.info(`serving ${config.numWorkers} Dynamo ${mode === "agg" ? "" : `${mode} `}worker(s) × ${dp} rank(s) of ${config.modelName} at dyn://${ep.namespace}.${ep.component}.${ep.name}, request plane tcp://${hostPort}, ${config.discoveryBackend === "etcd" ? `etcd ${config.etcdEndpoints}` : `file store ${config.discoveryDir}`}`);

  const owned = scope.move();
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= owned.disposeAsync());
  return { ready: Promise.resolve(), ports: { request: [requestPlane.port] }, instanceIds, requestPlane, publishers, records, pool, close, [Symbol.asyncDispose]: close };
}
