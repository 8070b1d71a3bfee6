// The frontend's routing state as the load other replicas' requests are counted in (router replica
// sync): a remote request loads its (worker, rank) in that model's router like a local one.
import type { RemoteLoad } from "../../core/routing/replica-ledger.ts";
import type { ActiveRequest } from "../../core/routing/active-load.ts";
import type { RoutingState } from "./routing-state.ts";

/** A request another frontend replica routed, counted here. */
export interface RemoteRequest {
  readonly model: string;
  /** The worker's pool: a prefill worker's load is counted in the prefill router. */
  readonly pool: "prefill" | undefined;
  readonly request: ActiveRequest;
}

export function remoteLoadOf(state: RoutingState): RemoteLoad<RemoteRequest> {
  return {
    add(workerId, dpRank, hashes, prefillTokens) {
      const w = state.worker(workerId);
      const rankId = w?.rankIds[dpRank];
      const pool = w?.record.disaggregation_mode === "prefill" ? "prefill" : undefined;
      const router = w === undefined ? undefined : state.routerOf(w.record.model, pool);
      if (rankId === undefined || router === undefined) return undefined;
      return { model: w!.record.model, pool, request: router.track(rankId, hashes, prefillTokens) };
    },
    firstToken(r) {
      state.routerOf(r.model, r.pool)?.firstToken(r.request);
      state.release(r.model);
    },
    free(r) {
      state.routerOf(r.model, r.pool)?.finish(r.request);
      state.release(r.model);
    },
  };
}
