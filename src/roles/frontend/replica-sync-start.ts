// Starts router replica sync for the frontend (--router-replica-sync): the NATS link, then the
// sync on it; both closed with the role (the sync first, so its last heartbeat goes out).
import type { FrontendConfig } from "../../config/frontend.ts";
import { DEFAULT_NATS_URL } from "../../config/replica-sync.ts";
import type { Logger } from "../../lib/logger.ts";
import { openNatsLink } from "../../transport/nats/nats-link.ts";
import { ReplicaSync } from "./replica-sync.ts";
import type { RoutingState } from "./routing-state.ts";

export async function startReplicaSync(
  config: FrontendConfig,
  deps: { state: RoutingState; logger: Logger; now: () => number; routerId: string },
  scope: AsyncDisposableStack,
): Promise<ReplicaSync> {
  const url = config.natsUrl ?? DEFAULT_NATS_URL;
  const link = scope.use(openNatsLink({ url, name: `kvcr-mock frontend ${deps.routerId}`, logger: deps.logger }));
  const sync = scope.use(
    new ReplicaSync({ state: deps.state, link, namespace: config.namespace, timeoutS: config.routerReplicaTimeout, logger: deps.logger, now: deps.now, wallMs: () => Date.now(), routerId: deps.routerId }),
  );
  deps.logger.info(`router replica sync on ${url}, subject ${sync.subjectName} (router id ${sync.routerId}, replica timeout ${config.routerReplicaTimeout} s)`);
  return sync;
}
