// The frontend's GET /health: `status` is "healthy", "degraded" (a worker is out of routing after
// failures; an agent's state is being re-synced, one of its slots is degraded, or workers publish
// through an agent and none is followed: the index may miss blocks for a while) or "no workers"
// (none registered, or every one out of routing: requests get 503); discovery that may be missing
// changes (etcd member silent, quorum lost, store unreachable) is degraded too, and so is router
// replica sync without NATS (this replica then routes on its own load only). Degraded still
// answers 200, so load balancers keep the frontend; --strict-health makes it 503.
import type { DiscoveryHealth } from "../../discovery/status.ts";
import type { AgentFeedHealth } from "./agent-feed.ts";
import type { ReplicaSyncHealth } from "./replica-sync.ts";

export interface HealthInputs {
  workerCount: number;
  /** Workers out of routing after failures, waiting for their /health. */
  ejected?: number;
  models: string[];
  agents?: AgentFeedHealth | undefined;
  discovery?: DiscoveryHealth | undefined;
  /** Router replica sync: NATS unreachable is degraded (routing goes on with this replica's own load). */
  replicaSync?: ReplicaSyncHealth | undefined;
  strict: boolean;
}

export function healthResponse(h: HealthInputs): Response {
  const a = h.agents;
  const degraded = (a !== undefined && (a.resyncing > 0 || a.degraded_slots > 0 || (a.workers_without_agent ?? 0) > 0)) || h.discovery?.degraded === true || h.replicaSync?.nats === "unreachable";
  const ejected = h.ejected ?? 0;
  const status = h.workerCount - ejected <= 0 ? "no workers" : degraded || ejected > 0 ? "degraded" : "healthy";
  const body = {
    status,
    instances: h.workerCount,
    ejected,
    models: h.models,
    ...(h.agents !== undefined ? { agents: h.agents } : {}),
    ...(h.discovery !== undefined ? { discovery: h.discovery } : {}),
    ...(h.replicaSync !== undefined ? { replica_sync: h.replicaSync } : {}),
  };
  const code = status === "healthy" || (status === "degraded" && !h.strict) ? 200 : 503;
  return Response.json(body, { status: code });
}
