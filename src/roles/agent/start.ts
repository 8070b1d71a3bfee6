// The `agent` role: start(config, deps) → handle, every resource on one AsyncDisposableStack as it
// opens (records last, so they are withdrawn first); a failed start unwinds what was opened.
// Sources: discovery intents (watched), --static-sources, POST /v1/sources. Discovery out: the host
// record, and one attachment record per active slot (attachment-records.ts).
import { createHash, randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { AgentConfig } from "../../config/agent.ts";
import { openDiscoveryStore } from "../../discovery/open.ts";
import { keys } from "../../discovery/keys.ts";
import type { DiscoveryStore } from "../../discovery/store.ts";
import type { Logger } from "../../lib/logger.ts";
import type { RoleHandle } from "../../lib/role.ts";
import { createBlockHasher } from "../../lib/xxh3.ts";
import type { AgentHostRecord } from "../../protocol/records.ts";
import { serveHttp } from "../../transport/http/server.ts";
import { KvStateAgent } from "./agent.ts";
import { AttachmentRecords } from "./attachment-records.ts";
import { createAgentApp } from "./http-app.ts";
import { RouterEventOutbound } from "./outbound.ts";
import { checkDiscoveryIntent, readStaticSources } from "./sources.ts";

export interface AgentDeps {
  logger: Logger;
  /** Injected in tests; otherwise the configured backend is opened (and closed with the role). */
  discovery?: DiscoveryStore;
}

export interface AgentHandle extends RoleHandle {
  readonly agentId: string;
  readonly httpUrl: string;
  readonly eventsEndpoint: string;
  readonly agent: KvStateAgent;
}

export async function start(config: AgentConfig, deps: AgentDeps): Promise<AgentHandle> {
  const { logger } = deps;
  // Before anything opens: a bad static file is a config error (exit 2), bad entries are warnings.
  const statics = config.staticSources !== undefined ? readStaticSources(config.staticSources) : undefined;
  const agentId = config.agentId ?? defaultAgentId(hostname(), config.namespace, config.port);
  await using scope = new AsyncDisposableStack();

  const store = deps.discovery ?? scope.use(await openDiscoveryStore(config, logger));
  const outbound = scope.use(new RouterEventOutbound(config.host, config.eventsPort, logger));
  const records = scope.use(new AttachmentRecords(store, config.namespace, agentId, logger));
  const agent = new KvStateAgent({
    maxSlots: config.maxSlots,
    retentionMs: config.slotRetention * 1000,
    replayTimeoutMs: config.replayTimeoutMs,
    maxPayloadBytes: config.maxEventPayloadBytes,
    logger,
    hasher: createBlockHasher(),
    outbound,
    slotChanged: (slot) => records.follow(slot),
  });
  // Slots stop before the outbound PUB closes (the stack unwinds in reverse).
  scope.defer(() => agent.close());

  let live = false;
  const http = serveHttp({ host: config.host, port: config.port, fetch: createAgentApp(agent, () => live, store).fetch, logger });
  scope.defer(() => http.stop(true));
  logger.info(`agent ${agentId}: HTTP ${http.url}, router events ${outbound.endpoint}, up to ${config.maxSlots} slot(s)`);

  if (statics) {
    for (const w of statics.warnings) logger.warn(w);
    statics.sources.forEach((s, i) => agent.putSource(`static:${i}`, s));
    logger.info(`${statics.sources.length} static source(s) from ${config.staticSources}`);
  }

  const intentPrefix = keys.kindPrefix(config.namespace, "intent");
  const watch = await store.watch(intentPrefix, (event) => {
    if (event.type === "delete") {
      agent.removeSource(event.key);
      return;
    }
    const r = checkDiscoveryIntent(event.entry.value);
    if (!r.ok) {
      logger.warn(`ignoring attachment intent ${event.entry.key}: ${r.problem}`);
      agent.removeSource(event.entry.key);
      return;
    }
    agent.putSource(event.entry.key, r.value);
  });
  scope.use(watch);

  const host: AgentHostRecord = { agent_id: agentId, http_url: http.url, router_events_endpoint: outbound.endpoint, max_slots: config.maxSlots };
  scope.use(await store.put(keys.agent(config.namespace, agentId), host));
  live = true;

  const owned = scope.move();
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= owned.disposeAsync());
  return {
    ready: Promise.resolve(),
    ports: { http: http.port, events: outbound.port },
    agentId,
    httpUrl: http.url,
    eventsEndpoint: outbound.endpoint,
    agent,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * The default agent id: the same for the same (host name, namespace, HTTP port), so an agent
 * restarted with the same flags overwrites its own host record instead of leaving the old one
 * behind as a second agent until its lease lapses. With --port 0 the port changes on every start,
 * so nothing stable is left to derive from: a random id, as before.
 */
export function defaultAgentId(host: string, namespace: string, port: number): string {
  if (port === 0) return `agent-${randomBytes(4).toString("hex")}`;
  return `agent-${createHash("sha256").update(`${host}\0${namespace}\0${port}`).digest("hex").slice(0, 12)}`;
}
