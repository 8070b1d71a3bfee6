// The mocker's event sockets: per worker its outlets (raw PUBs + replay, or the direct-mode relay)
// and, with router hints, one held placeholder port per CacheOwner. Each is pushed on the caller's
// stack as it opens, so a failure part-way closes the ones already open.
import type { MockerConfig } from "../../config/mocker.ts";
import type { Logger } from "../../lib/logger.ts";
import { holdPort } from "../../transport/port-hold.ts";
import { createPortPlan } from "../../transport/port-plan.ts";
import type { WorkerIdentity } from "./identity.ts";
import { openWorkerOutlets, type WorkerOutlets } from "./outlets.ts";
import type { PublishFaults } from "./rank-publisher.ts";
import type { WorkerEndpoints } from "./records.ts";

export interface EventSockets {
  /** Per worker, by index. */
  outlets: WorkerOutlets[];
  /** Per worker, by index: the actual ports, as discovery and the logs name them. */
  endpoints: WorkerEndpoints[];
}

export function openEventSockets(config: MockerConfig, workers: readonly WorkerIdentity[], logger: Logger, scope: AsyncDisposableStack, faultsFor?: (worker: number, rank: number) => PublishFaults): EventSockets {
  // Port-0 listeners (raw PUBs, replay, relays, hint ports) take consecutive free ports from one
  // plan: thousands of kernel port-0 searches were most of a 4,096-worker start-up.
  const ports = createPortPlan();
  const outlets: WorkerOutlets[] = [];
  const endpoints: WorkerEndpoints[] = [];
  for (const id of workers) {
    const o = openWorkerOutlets(config, id, logger, ports, faultsFor);
    scope.defer(() => o.close());
    outlets.push(o);
    let hintPorts: number[] | undefined;
    if (config.kvStateAgentRouterHints) {
      hintPorts = id.cacheOwnerIds.map(() => {
        const held = holdPort(config.host, 0, ports);
        scope.defer(() => held.close());
        return held.port;
      });
    }
    endpoints.push({ rawPorts: o.rawPorts, replayPorts: o.replayPorts, routerEventsEndpoint: o.routerEventsEndpoint, hintPorts });
  }
  return { outlets, endpoints };
}
