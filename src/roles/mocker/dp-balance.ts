// Which data-parallel rank of a worker serves a request through its OpenAI API, as vLLM's server
// decides: the `X-data-parallel-rank` header pins one (or SGLang's body field `data_parallel_rank`,
// which sglang-router --dp-aware sends); otherwise its internal DP balancer takes the rank with the
// lowest `waiting × 4 + running`, scanning from the server's start index (ties go to the first
// scanned). Pure.

export const DP_RANK_HEADER = "x-data-parallel-rank";

export interface RankLoad {
  waiting: number;
  running: number;
}

/**
 * vLLM's DPLBAsyncMPClient: its start index is `engines × client_index / client_count`, 0 for the
 * one API server a worker has here. Counts are the engines' own, read when the request arrives
 * (vLLM's are the coordinator's, up to 100 ms old, plus its own optimistic increments).
 */
export function balancedRank(loads: readonly RankLoad[], startIndex = 0): number {
  const n = loads.length;
  let best = 0;
  let bestScore = Infinity;
  for (let i = 0; i < n; i++) {
    const idx = (startIndex + i) % n;
    const { waiting, running } = loads[idx]!;
    const score = waiting * 4 + running;
    if (score < bestScore) {
      bestScore = score;
      best = idx;
    }
  }
  return best;
}

/** The header's rank: undefined when absent, a problem (→ 400) when not a rank of this worker. */
export function pinnedRank(header: string | null, ranks: number): number | undefined | { problem: string } {
  if (header === null || header.trim() === "") return undefined;
  const text = header.trim();
  const rank = /^[0-9]{1,9}$/.test(text) ? Number(text) : NaN;
  if (Number.isNaN(rank)) return { problem: `X-data-parallel-rank: expected a rank from 0 to ${ranks - 1}, got ${JSON.stringify(header.slice(0, 40))}` };
  if (rank >= ranks) return { problem: `X-data-parallel-rank: rank ${rank} is out of range; this worker has ${ranks} data-parallel rank(s), 0 to ${ranks - 1}` };
  return rank;
}

/** SGLang's `data_parallel_rank` body field: undefined when absent or null, a problem (→ 400) when not a rank of this worker. */
export function bodyRank(value: unknown, ranks: number): number | undefined | { problem: string; param: string } {
  if (value === undefined || value === null) return undefined;
  const param = "data_parallel_rank";
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) return { problem: `data_parallel_rank: expected a rank from 0 to ${ranks - 1}, got ${JSON.stringify(value)}`, param };
  if (value >= ranks) return { problem: `data_parallel_rank: rank ${value} is out of range; this worker has ${ranks} data-parallel rank(s), 0 to ${ranks - 1}`, param };
  return value;
}

/** The rank a request pins: the header first (vLLM's), else the body field (SGLang's); undefined to balance. */
export function requestedRank(header: string | null, body: unknown, ranks: number): number | undefined | { problem: string; param?: string } {
  const byHeader = pinnedRank(header, ranks);
  if (byHeader !== undefined) return byHeader;
  return bodyRank((body as Record<string, unknown> | null)?.data_parallel_rank, ranks);
}
