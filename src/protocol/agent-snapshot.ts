// The state agent's `GET /v1/snapshot` body (docs/http-api.md): its whole router state stamped with
// the outbound cursor it reflects, so a late router loads it and follows the stream from
// cursor + 1. Its `sources` are residency holders (protocol/residency.ts), each naming its CacheOwner.
import * as v from "valibot";
import { ResidencyTiersSchema, type ResidencyBlock } from "./residency.ts";

export const AgentSnapshotSchema = v.object({
  cursor: v.pipe(v.number(), v.integer(), v.minValue(0)),
  sources: v.array(
    v.object({
      cache_owner_id: v.string(),
      worker_id: v.string(),
      dp_rank: v.pipe(v.number(), v.integer(), v.minValue(0)),
      tiers: ResidencyTiersSchema,
    }),
  ),
});
export type AgentSnapshot = v.InferOutput<typeof AgentSnapshotSchema>;
export type AgentSnapshotBlock = ResidencyBlock;
