// The state agent's `GET /v1/snapshot` body (docs/http-api.md): its whole router state stamped with
// the outbound cursor it reflects, so a late router loads it and follows the stream from
// cursor + 1. Hashes are decimal strings (u64 does not fit a JSON number); blocks sorted by seq
// hash.
import * as v from "valibot";

const u64String = v.pipe(v.string(), v.regex(/^(0|[1-9][0-9]{0,19})$/, "expected a u64 as a decimal string"));
const block = v.object({ seq_hash: u64String, local_hash: u64String });
const blocks = v.array(block);

export const AgentSnapshotSchema = v.object({
  cursor: v.pipe(v.number(), v.integer(), v.minValue(0)),
  sources: v.array(
    v.object({
      cache_owner_id: v.string(),
      worker_id: v.string(),
      dp_rank: v.pipe(v.number(), v.integer(), v.minValue(0)),
      tiers: v.object({ device: blocks, host: blocks, disk: blocks }),
    }),
  ),
});
export type AgentSnapshot = v.InferOutput<typeof AgentSnapshotSchema>;
export type AgentSnapshotBlock = v.InferOutput<typeof block>;
