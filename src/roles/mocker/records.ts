// Builds the mocker's discovery records (docs/ARCHITECTURE.md, "Discovery"): one worker record per worker and, in
// state-agent mode, one attachment intent per (worker, rank). Pure: ports and URLs come in.
import type { MockerConfig } from "../../config/mocker.ts";
import { stateDumpUrl } from "../../protocol/kv-events/state-dump.ts";
import { EVENT_MODES, INGRESS_PROTOCOL, type AttachmentIntent, type WorkerRecord } from "../../protocol/records.ts";
import type { WorkerIdentity } from "./identity.ts";
import type { Topology } from "./topology.ts";

export interface WorkerEndpoints {
  /** Actual raw PUB port per rank (empty when no raw stream). */
  rawPorts: number[];
  replayPorts: number[] | undefined;
  /** Direct mode: the router-event relay endpoint. */
  routerEventsEndpoint: string | undefined;
  /** Router-hint placeholder port per CacheOwner, when hints are on. */
  hintPorts: number[] | undefined;
  /** The worker's own OpenAI API base URL, when it serves one. */
  openaiUrl?: string;
  /** Prefill or decode (absent: aggregated), and a prefill worker's KV transfer endpoint (host:port). */
  disaggregationMode?: "prefill" | "decode";
  kvTransferEndpoint?: string;
}

export function tcpEndpoint(host: string, port: number): string {
  return `tcp://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}`;
}

/** The host others dial: the raw host in state-agent mode, else the bind address. */
export function advertisedHost(config: MockerConfig): string {
  return config.kvStateAgent && config.kvStateAgentRawHost ? config.kvStateAgentRawHost : config.host;
}

export function workerRecord(
  config: MockerConfig,
  id: WorkerIdentity,
  ep: WorkerEndpoints,
  ctx: { httpUrl: string; topology: Topology; domain: string | undefined; loraAdapters?: readonly string[] },
): WorkerRecord {
  const host = advertisedHost(config);
  const record: WorkerRecord = {
    worker_id: id.workerId,
    worker_index: id.index,
    model: config.modelName,
    worker_type: "mocker",
    request_url: `${ctx.httpUrl}/v1/generate`,
    data_parallel_size: config.dataParallelSize,
    block_size: config.blockSize,
    total_gpu_blocks: config.numGpuBlocksOverride,
    total_host_blocks: config.numHostBlocks,
    max_num_batched_tokens: config.maxNumBatchedTokens,
    max_model_len: config.maxModelLen,
    kv_event_source_mode: config.kvStateAgent ? EVENT_MODES.stateAgent : EVENT_MODES.direct,
    raw_endpoints: ep.rawPorts.map((p) => tcpEndpoint(host, p)),
    raw_topic: id.rawTopic,
    capabilities: config.kvStateAgentRouterHints ? ["generate", "router_hint"] : ["generate"],
    topology: ctx.topology.labels,
  };
  if (ep.routerEventsEndpoint) record.router_events_endpoint = ep.routerEventsEndpoint;
  if (ep.replayPorts) record.replay_endpoints = ep.replayPorts.map((p) => tcpEndpoint(host, p));
  if (id.cacheOwnerIds.length > 0) record.cache_owner_ids = id.cacheOwnerIds;
  if (ep.hintPorts) {
    record.router_hint_sources = id.cacheOwnerIds.map((owner, r) => ({ cache_owner_id: owner, source_control_endpoint: tcpEndpoint(host, ep.hintPorts![r]!) }));
  }
  if (ctx.domain !== undefined) record.kv_transfer_domain = ctx.domain;
  if (ep.openaiUrl !== undefined) record.openai_url = ep.openaiUrl;
  if (ep.disaggregationMode !== undefined) record.disaggregation_mode = ep.disaggregationMode;
  if (ep.kvTransferEndpoint !== undefined) record.kv_transfer_endpoint = ep.kvTransferEndpoint;
  if (ctx.loraAdapters !== undefined && ctx.loraAdapters.length > 0) record.lora_adapters = [...ctx.loraAdapters];
  return record;
}

export function attachmentIntents(config: MockerConfig, id: WorkerIdentity, ep: WorkerEndpoints, ctx: { incarnation: number; kvStateEndpoint: string; httpUrl?: string }): AttachmentIntent[] {
  const host = advertisedHost(config);
  return id.cacheOwnerIds.map((owner, r) => {
    const intent: AttachmentIntent = {
      cache_owner_id: owner,
      worker_id: id.workerId,
      dp_rank: r,
      block_size: config.blockSize,
      ingress_protocol: INGRESS_PROTOCOL,
      raw_endpoint: tcpEndpoint(host, ep.rawPorts[r]!),
      raw_topic: id.rawTopic,
      kv_state_endpoint: ctx.kvStateEndpoint,
      incarnation: ctx.incarnation,
    };
    if (ep.replayPorts) intent.replay_endpoint = tcpEndpoint(host, ep.replayPorts[r]!);
    if (ep.hintPorts) intent.router_hint_source = tcpEndpoint(host, ep.hintPorts[r]!);
    // Dumps are built from the host tier's token records (state-dump.ts): none without one.
    if (ctx.httpUrl !== undefined && config.numHostBlocks > 0) intent.state_dump_url = stateDumpUrl(ctx.httpUrl, id.index, r);
    return intent;
  });
}
