// What the mocker logs about its event sockets once they are open: ports picked by the OS (0) go
// into discovery and the logs; one summary at info (a port list while it is short), each worker's
// endpoints at debug, and in state-agent mode where its cache owners start.
import type { MockerConfig } from "../../config/mocker.ts";
import { LOG_LEVELS, type Logger } from "../../lib/logger.ts";
import type { WorkerIdentity } from "./identity.ts";
import { advertisedHost, tcpEndpoint, type WorkerEndpoints } from "./records.ts";

export function logEventSockets(config: MockerConfig, workers: readonly WorkerIdentity[], endpoints: readonly WorkerEndpoints[], logger: Logger): void {
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
  logger.info(`events: ${eventLine.join("; ") || "no event sockets"}${workers.length > 1 ? " (per worker at --log-level debug, and in discovery)" : ""}`);
  // Built only when they will be printed: thousands of workers make thousands of lines.
  for (const id of logger.level >= LOG_LEVELS.debug ? workers : []) {
    const ep = endpoints[id.index]!;
    const parts = [
      ep.rawPorts.length > 0 ? `raw ${ep.rawPorts.map((p) => tcpEndpoint(host, p)).join(" ")}` : "",
      ep.replayPorts ? `replay ${ep.replayPorts.map((p) => tcpEndpoint(host, p)).join(" ")}` : "",
      ep.routerEventsEndpoint ? `router events ${ep.routerEventsEndpoint}` : "",
    ].filter(Boolean);
    logger.debug(`worker ${id.index} (${id.workerId}): ${parts.join("; ") || "no event sockets"}`);
  }
  if (config.kvStateAgent) {
    const first = workers[0]!;
    logger.info(`state-agent mode: ${workers.length * config.dataParallelSize} cache owner(s) from slot ${config.kvStateAgentCacheSlot}; worker 0 raw topic ${first.rawTopic} (each worker's at --log-level debug)`);
  }
}

/** Where the workers' own OpenAI APIs listen: one line, the port list while short. */
export function logWorkerApis(host: string, ports: readonly number[], logger: Logger): void {
  const h = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  const where = ports.length <= 8 ? ports.map((p) => `http://${h}:${p}`).join(" ") : portList(host, ports);
  logger.info(`worker API (vLLM's OpenAI server, one per worker): ${where}${ports.length > 8 ? " (each worker's in discovery)" : ""}`);
}

/** `tcp://h:5557 tcp://h:5558` while short; `1,024 ports 30000–31023 on h` beyond 8. */
function portList(host: string, ports: readonly number[]): string {
  if (ports.length <= 8) return ports.map((p) => tcpEndpoint(host, p)).join(" ");
  let lo = Infinity;
  let hi = -Infinity;
  for (const p of ports) [lo, hi] = [Math.min(lo, p), Math.max(hi, p)];
  return `${ports.length.toLocaleString("en-US")} ports ${lo}–${hi} on ${host}`;
}
